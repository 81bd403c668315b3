//! The machine a run happens on (cores, CPU, memory, kernel, load) and
//! waiting for it to be quiet before measuring.

use std::time::{Duration, Instant};

/// What the report says about the machine.
#[derive(Clone, Debug)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub memory_gib: f64,
    pub kernel: String,
}

impl Machine {
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|rest| rest.split_once(':')).map(|(_, v)| v.trim()))
            .unwrap_or("unknown CPU")
            .to_string();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
        Machine { cores: cores(), cpu, memory_gib: kib / (1024.0 * 1024.0), kernel: format!("Linux {kernel}") }
    }

    pub fn describe(&self) -> String {
        format!("{} cores ({}), {:.0} GiB RAM, {}", self.cores, self.cpu, self.memory_gib, self.kernel)
    }
}

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The 1-, 5- and 15-minute load averages.
pub fn load() -> (f64, f64, f64) {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut parts = text.split_whitespace().map(|p| p.parse().unwrap_or(0.0));
    (parts.next().unwrap_or(0.0), parts.next().unwrap_or(0.0), parts.next().unwrap_or(0.0))
}

/// Waits, polling every 30 s, until the 1-minute load is below `threshold`
/// or `max` has passed. Returns the sentence for the report.
pub fn wait_until_quiet(threshold: f64, max: Duration) -> String {
    let start = Instant::now();
    loop {
        let (one, five, _) = load();
        if one < threshold {
            return format!(
                "1-minute load {one:.2} (5-minute {five:.2}) before this section, below {threshold} after waiting {:.0} s",
                start.elapsed().as_secs_f64()
            );
        }
        if start.elapsed() >= max {
            return format!(
                "the machine never got quiet: 1-minute load still {one:.2} (5-minute {five:.2}) after waiting {:.0} min; measured anyway",
                start.elapsed().as_secs_f64() / 60.0
            );
        }
        eprintln!("cordon-bench: 1-minute load {one:.2} ≥ {threshold}; waiting for a quiet machine");
        std::thread::sleep(Duration::from_secs(30).min(max.saturating_sub(start.elapsed())));
    }
}

/// Today's date (UTC), `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_and_machine() {
        let date = super::today();
        assert_eq!(date.len(), 10);
        assert!(date.as_str() > "2024-01-01", "{date}");
        let machine = super::Machine::detect();
        assert!(machine.cores >= 1);
        assert!(machine.describe().contains("cores"));
    }
}
