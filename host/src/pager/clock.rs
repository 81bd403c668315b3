//! A page is bounded by time as well as by size: it answers with what it has
//! (possibly no item) before its request's deadline, with a continuation at
//! the exact point the work reached, rather than let a long scan that finds
//! little run into the deadline and lose everything.
//!
//! The page is due at the earlier of the server's page time (`page_ms`, when
//! set) and the request's deadline less a margin, kept to answer: a quarter of
//! the time the request had left, between `MIN_MARGIN` and `MAX_MARGIN`. The
//! margin also covers the work between two checkpoints, which a page waits
//! for (a search checkpoints between files: one file that takes longer than
//! the margin to search can still run into the deadline). The
//! pager looks at the clock between chunks, so a page ends on time at a
//! checkpoint (see WIT `chunk`) or after a chunk of data; a tool that never
//! returns from `next` is still stopped at the deadline itself.

use std::time::{Duration, Instant};

/// The least of a request's time a page keeps to answer.
const MIN_MARGIN: Duration = Duration::from_millis(50);
/// The most of a request's time a page keeps to answer.
const MAX_MARGIN: Duration = Duration::from_secs(2);

/// When a page being pulled is due.
#[derive(Debug, Clone, Copy)]
pub struct PageClock {
    started: Instant,
    due: Instant,
}

impl PageClock {
    /// The clock of a page started now for a request due by `deadline`, at
    /// most `page_time` long when the server sets one.
    pub fn start(deadline: Instant, page_time: Option<Duration>) -> PageClock {
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        let margin = (left / 4).clamp(MIN_MARGIN, MAX_MARGIN);
        let mut due = deadline.checked_sub(margin).unwrap_or(started).max(started);
        if let Some(page_time) = page_time {
            due = due.min(started + page_time);
        }
        PageClock { started, due }
    }

    /// Whether the page should answer now with what it has.
    pub fn is_due(&self) -> bool {
        Instant::now() >= self.due
    }

    /// How long the page has been pulled.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_keeps_a_margin_of_its_requests_time_and_its_own_limit() {
        let now = Instant::now();
        let clock = PageClock::start(now + Duration::from_secs(1), None);
        let keeps = (now + Duration::from_secs(1)) - clock.due;
        assert!(keeps >= Duration::from_millis(240) && keeps <= Duration::from_millis(251), "{keeps:?}");
        let long = PageClock::start(now + Duration::from_secs(30), None);
        assert!(long.due <= now + Duration::from_secs(28) + Duration::from_millis(50), "at most 2 s kept");
        let short = PageClock::start(now + Duration::from_secs(30), Some(Duration::from_millis(5)));
        assert!(short.due <= short.started + Duration::from_millis(5), "the server's page time bounds it first");
        let late = PageClock::start(now, None);
        assert!(late.is_due(), "a request already at its deadline is due at once");
    }
}
