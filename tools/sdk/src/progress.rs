//! Progress reports: how far a long call has come, which the host turns into
//! MCP `notifications/progress` (rate-limited, and only for clients that asked).
//!
//! Reporting is cheap, so a tool may report often; `done` must only grow
//! within one call (the host ignores a report that does not grow it), so count
//! it from the start of the stream, never from the start of a page.

/// Reports that the call has done `done` units of `total` (when known), with
/// a `message` saying what the units are (e.g. "120 files, 3.2 MiB scanned").
/// `done` must grow from report to report; one that does not is ignored.
/// Natively (unit tests) this does nothing.
#[cfg(target_arch = "wasm32")]
pub fn report(done: u64, total: Option<u64>, message: Option<&str>) {
    crate::component::cordon::tool::progress::report(done, total, message);
}

/// Reports progress; natively (unit tests) nothing to report to.
#[cfg(not(target_arch = "wasm32"))]
pub fn report(done: u64, total: Option<u64>, message: Option<&str>) {
    let _ = (done, total, message);
}

/// `bytes` for people: "512 B", "3.2 KiB", "1.0 MiB", ...
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    // Past 1023.95 the value would show as "1024.0".
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Files and bytes a search has scanned in this stream; reports the bytes as
/// `done` (no total), with "N files, X scanned", every [`Scanned::EVERY_FILES`]
/// files or [`Scanned::EVERY_BYTES`] bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Files finished.
    pub files: u64,
    /// Bytes scanned, in finished files and the one under way.
    pub bytes: u64,
    /// The files and bytes at the last report.
    reported: (u64, u64),
}

impl Scanned {
    /// Files between reports: a small file costs little more than a report
    /// (a message formatted and a host call), and the host sends at most one
    /// per 100 ms anyway.
    pub const EVERY_FILES: u64 = 16;
    /// Bytes between reports, so a large file's search is reported as it goes.
    pub const EVERY_BYTES: u64 = 1 << 20;

    /// Adds `files` finished and `bytes` scanned, and reports when enough
    /// was done since the last report.
    pub fn add(&mut self, files: u64, bytes: u64) {
        self.files += files;
        self.bytes += bytes;
        let (files, bytes) = self.reported;
        if self.files - files >= Scanned::EVERY_FILES || self.bytes - bytes >= Scanned::EVERY_BYTES {
            self.reported = (self.files, self.bytes);
            report(self.bytes, None, Some(&self.message()));
        }
    }

    /// "N files, X scanned".
    pub fn message(&self) -> String {
        let s = if self.files == 1 { "" } else { "s" };
        format!("{} file{s}, {} scanned", self.files, format_bytes(self.bytes))
    }
}

/// Entries a walk has looked at in this stream; reports them as `done` (no
/// total), with "N entries walked", every [`Walked::EVERY`] entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
    /// Entries walked.
    pub entries: u64,
}

impl Walked {
    /// How many entries between reports: an entry costs little more than a
    /// report, and the host sends at most one per 100 ms anyway.
    pub const EVERY: u64 = 16;

    /// Counts one more entry, reporting every [`Walked::EVERY`].
    pub fn step(&mut self) {
        self.entries += 1;
        if self.entries.is_multiple_of(Walked::EVERY) {
            report(self.entries, None, Some(&self.message()));
        }
    }

    /// "N entries walked".
    pub fn message(&self) -> String {
        let s = if self.entries == 1 { "y" } else { "ies" };
        format!("{} entr{s} walked", self.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_people_write_them() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (3_355_443, "3.2 MiB"),
            (1024 * 1024 - 1, "1.0 MiB"),
            (5 << 30, "5.0 GiB"),
            (u64::MAX, "16.0 EiB"),
        ];
        for (bytes, text) in cases {
            assert_eq!(format_bytes(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn counters_grow_and_say_what_they_count() {
        let mut scanned = Scanned::default();
        scanned.add(1, 100);
        assert_eq!(scanned.message(), "1 file, 100 B scanned");
        scanned.add(0, 3 << 20);
        scanned.add(119, 0);
        assert_eq!((scanned.files, scanned.bytes), (120, (3 << 20) + 100));
        assert_eq!(scanned.message(), "120 files, 3.0 MiB scanned");

        let mut walked = Walked::default();
        walked.step();
        assert_eq!(walked.message(), "1 entry walked");
        (0..40).for_each(|_| walked.step());
        assert_eq!(walked.message(), "41 entries walked");
    }
}
