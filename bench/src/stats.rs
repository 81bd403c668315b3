//! Medians, percentiles and the way numbers are printed in the report.

use std::time::Duration;

/// The median of `values` (the mean of the two middle ones for an even count);
/// 0 for none.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

/// The nearest-rank `p`-th percentile (0–100) of `sorted` (ascending); 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of durations, in seconds.
pub fn median_secs(samples: &[Duration]) -> f64 {
    median(&samples.iter().map(Duration::as_secs_f64).collect::<Vec<_>>())
}

/// Seconds with a unit that keeps three significant digits: `412 µs`, `31.6 ms`, `2.53 s`.
pub fn secs(s: f64) -> String {
    if s <= 0.0 {
        "0".into()
    } else if s < 1e-3 {
        format!("{} µs", sig3(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} s", sig3(s))
    }
}

/// Three significant digits, no exponent.
pub fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A speed ratio, `0.34×`; `-` when either side is missing.
pub fn ratio(numerator: f64, denominator: f64) -> String {
    if numerator <= 0.0 || denominator <= 0.0 || !numerator.is_finite() || !denominator.is_finite() {
        return "-".into();
    }
    format!("{:.2}×", numerator / denominator)
}

/// An integer with thin thousands separators: `163,560`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// KiB as MiB, `35 MiB`.
pub fn mib_from_kib(kib: u64) -> String {
    if kib == 0 { "-".into() } else { format!("{} MiB", count(kib.div_ceil(1024))) }
}

/// A file size: whole MiB or GiB when exact, else MiB with a decimal.
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 50.0), 50.0);
        assert_eq!(percentile(&sorted, 99.0), 99.0);
        assert_eq!(percentile(&sorted, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn formatting() {
        assert_eq!(secs(0.000_412), "412 µs");
        assert_eq!(secs(0.0316), "31.6 ms");
        assert_eq!(secs(2.534), "2.53 s");
        assert_eq!(count(163_560), "163,560");
        assert_eq!(count(12), "12");
        assert_eq!(ratio(1.0, 4.0), "0.25×");
        assert_eq!(ratio(0.0, 4.0), "-");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(8 << 20), "8 MiB");
    }
}
