//! The items of a search, produced lazily file by file, with the resume
//! positions (`crate::position`) that let a reopened search continue exactly.
//!
//! What cannot be searched is named in the output, at its place, by an item
//! `{path, not_searched: why}`: a file that cannot be read, or the rest of one
//! from a line longer than the search may hold (the searcher's heap limit,
//! see `args::HeapLimit`); and an ignore file the walk did not apply by
//! `{path, not_applied: why}`. The search goes on past them.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::rc::Rc;

use cordon_sdk::items::{self, ItemSource, Pace, Step};
use cordon_sdk::progress::Scanned;
use cordon_sdk::scan::{self, Sought};
use cordon_sdk::walk::Unapplied;
use cordon_sdk::{Error, ErrorCode};
use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use crate::args::{HeapLimit, OutputMode};
use crate::guard::{Guard, HEAD};
use crate::position::{Counts, Position, Where, encode};
use crate::render::{self, Shown};
use crate::sink::{Collector, Queued, Settings};
use crate::walk::{Next, Walker};

/// The search's fixed parts.
pub struct Plan {
    /// The output mode.
    pub mode: OutputMode,
    /// The regex.
    pub matcher: RegexMatcher,
    /// The searcher (its buffers are reused from file to file).
    pub searcher: Searcher,
    /// What the searcher may hold, to say why a file was not searched.
    pub heap: HeapLimit,
    /// Whether binary files are searched as text.
    pub binary: bool,
    /// Before-context lines asked for.
    pub before: usize,
    /// After-context lines asked for.
    pub after: usize,
    /// Cut lines longer than this.
    pub max_line: Option<usize>,
    /// Content mode: a search run stops once it queued this many items...
    pub batch_items: usize,
    /// ...or this many bytes of items, and goes on from there later.
    pub batch_bytes: usize,
    /// How much of a file's start is read in host calls (`read_start`): a
    /// file no larger ([`WHOLE`], or [`HEAD`] where the search may hold
    /// little) without a NUL byte is searched where it lies, and only a
    /// larger one's rest is read on through a `Guard`.
    pub read: usize,
    /// How a file's start is read with the search's needles (see
    /// `needles`): a file the host reads whole without finding one is not
    /// searched. `None`: every file is.
    pub seeking: Option<scan::Seeking>,
}

/// The most of a file one host call reads (`scan.read-head`'s most, 1 MiB).
/// The host sizes its buffer by the file, so a small file costs no more.
pub const WHOLE: usize = 1 << 20;

/// The file being searched.
struct Current {
    /// The file's path, and how items and positions show it.
    name: Shown,
    /// The file's start as the host read it (not read: resumed inside).
    start: Start,
    /// The file, opened when what is searched lies past `head`.
    file: Option<File>,
    /// The line and byte the next search run starts at.
    line: u64,
    byte: u64,
    /// Whether an item of this file was queued (or, reopened, emitted).
    queued_any: bool,
    /// Whether this file was reopened at a position, to check it.
    check_resume: bool,
}

/// A file's start, as read in host calls.
struct Start {
    /// Its first bytes (none when ruled out, or not read).
    head: Vec<u8>,
    /// Whether they are the whole file.
    whole: bool,
    /// Where its first NUL byte lies, when the search looks for them.
    nul: Option<usize>,
    /// The bytes the host read.
    read: u64,
    /// Read whole by the host, it holds none of the search's needles.
    ruled_out: bool,
}

impl Start {
    /// A file opened to be searched from inside, its start not read.
    fn unread() -> Start {
        Start { head: Vec::new(), whole: false, nul: None, read: 0, ruled_out: false }
    }
}

/// The items of a search, file by file.
pub struct GrepSource {
    plan: Plan,
    walker: Walker,
    /// Where a reopened search starts.
    resume: Option<(PathBuf, Where)>,
    current: Option<Current>,
    /// Items ready, each with whether it is its file's first, and the file.
    queue: VecDeque<(Queued, bool, Rc<str>)>,
    counts: Counts,
    done: bool,
    /// Files and bytes searched by this stream, reported as progress.
    scanned: Scanned,
    /// Of those, the files the host ruled out by the search's needles (the
    /// binary ones among them counted binary too).
    ruled_out: u64,
    /// The work since the last item or checkpoint.
    pace: Pace,
    /// The path the last ignore file not applied was said at, and how many
    /// were said there in a row.
    said: Option<(PathBuf, u32)>,
}

/// A search that finds nothing says how far it got after this many files
/// or bytes searched (a checkpoint, see `ItemSource::next_step`): a few
/// milliseconds of work, and at most 10 ms (and a file) where it runs slower.
const CHECKPOINT: Pace = Pace::every(256, 4 << 20, items::CHECKPOINT_TIME);

impl GrepSource {
    /// Searches the files `walker` yields, from `resume` on.
    pub fn new(plan: Plan, walker: Walker, resume: Option<Position>) -> GrepSource {
        let counts = resume.as_ref().map(|p| p.counts).unwrap_or_default();
        GrepSource {
            plan,
            walker,
            resume: resume.map(|p| (p.path, p.at)),
            current: None,
            queue: VecDeque::new(),
            counts,
            done: false,
            scanned: Scanned::default(),
            ruled_out: 0,
            pace: CHECKPOINT,
            said: None,
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The files finished and bytes searched by this stream (not before its
    /// resume position), as its progress reports say.
    pub fn scanned(&self) -> Scanned {
        self.scanned
    }

    /// How many files the host ruled out by the search's needles: read
    /// whole without one, they were neither copied nor searched.
    pub fn ruled_out(&self) -> u64 {
        self.ruled_out
    }

    /// Whether every file was searched and every item emitted.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Opens the next file to search: `Opened`, or how far the walk got
    /// past files it left out, or `End` of the walk.
    fn start_next_file(&mut self) -> Result<Walked, Error> {
        loop {
            let (path, named) = match self.walker.next_file() {
                None => return Ok(Walked::End),
                Some(Err(_)) => {
                    self.counts.errors += 1;
                    continue;
                }
                // Past a resume position (or a shard's boundary) only: the walk
                // passes the directories holding it.
                Some(Ok(Next::Passed(path))) if self.resume.as_ref().is_none_or(|(at, _)| path > *at) => {
                    return Ok(Walked::Passed(path));
                }
                Some(Ok(Next::Passed(_))) => continue,
                Some(Ok(Next::Unapplied(unapplied))) => match self.unapplied(unapplied) {
                    Some(said) => return Ok(said),
                    None => continue,
                },
                Some(Ok(Next::Unreadable(dir, e))) => {
                    if self.past_resume(&dir) {
                        self.counts.errors += 1;
                        let why = format!("a directory that could not be read: {}", e.message);
                        self.not_searched(&mut Shown::new(dir), &why);
                        return Ok(Walked::Said);
                    }
                    continue;
                }
                Some(Ok(Next::File(path, named))) => (path, named),
            };
            let (mut line, mut byte, mut resumed) = (1, 0, false);
            if let Some((resume_path, at)) = &self.resume {
                if path < *resume_path {
                    continue;
                }
                let at = (path == *resume_path).then_some(*at);
                // Files come in path order: past the position, none is before it.
                self.resume = None;
                match at {
                    Some(Where::End) => continue,
                    Some(Where::Line(l, b)) => (line, byte, resumed) = (l.max(1), b, true),
                    Some(Where::Start | Where::Noted(_)) | None => {}
                }
            }
            // A file searched from its start is read in one call when it is
            // small (most are); one resumed inside is opened.
            let opened = if byte == 0 {
                self.read_start(&path, named).map(|start| (start, None))
            } else {
                File::open(&path).map(|file| (Start::unread(), Some(file))).map_err(|e| Error::io("", &e))
            };
            let (start, file) = match opened {
                Ok(opened) => opened,
                Err(e) => {
                    self.counts.errors += 1;
                    self.pace.add(1, 0);
                    self.not_searched(&mut Shown::new(path), &format!("it could not be read: {}", e.message));
                    return Ok(Walked::Said);
                }
            };
            if !resumed {
                self.counts.files_searched += 1;
            }
            self.ruled_out += u64::from(start.ruled_out);
            self.current = Some(Current {
                name: Shown::new(path),
                start,
                file,
                line,
                byte,
                queued_any: resumed,
                check_resume: resumed,
            });
            return Ok(Walked::Opened);
        }
    }

    /// A file's start, read in one host call: its first `HEAD` bytes, which
    /// tell a binary file; and when they hold no NUL byte (or binary files
    /// are searched) and the file goes on, up to `plan.read` of it in a
    /// second call. A large binary file is not read further than before.
    /// With where its first NUL byte lies, when the search looks for them:
    /// each byte looked at once (but those a second read reads again).
    /// With needles, one call: the host reads up to `plan.read` and no
    /// further than `HEAD` in a file whose first `HEAD` bytes hold a NUL
    /// byte, and rules out a file read whole that holds none of them.
    fn read_start(&self, path: &std::path::Path, named: bool) -> Result<Start, Error> {
        if let Some(seeking) = &self.plan.seeking {
            return self.seek_start(path, named, seeking);
        }
        let start = self.read_head(path, named, HEAD)?;
        if start.whole || start.nul.is_some() || self.plan.read <= HEAD {
            return Ok(start);
        }
        self.read_head(path, named, self.plan.read)
    }

    /// One host call: a file's first `max` bytes, and where their first NUL
    /// byte lies when the search looks for them.
    fn read_head(&self, path: &std::path::Path, named: bool, max: usize) -> Result<Start, Error> {
        let (head, whole) = scan::read_head(path, named, max as u32)?;
        Ok(self.started(head, whole))
    }

    /// A start read as bytes, with where their first NUL byte lies when the
    /// search looks for them.
    fn started(&self, head: Vec<u8>, whole: bool) -> Start {
        let nul = if self.plan.binary { None } else { memchr::memchr(0, &head) };
        Start { read: head.len() as u64, head, whole, nul, ruled_out: false }
    }

    /// One host call with the search's needles (`read_head_seeking`, a NUL
    /// byte looked for in the first `HEAD` bytes first): the start as
    /// `read_head` gives it, or word that the file holds none. A file ruled
    /// out that way but for a NUL byte past the first `HEAD` is read after
    /// all: the search ends before the NUL's line, where the guard stops it,
    /// and counts it binary there.
    fn seek_start(&self, path: &std::path::Path, named: bool, seeking: &scan::Seeking) -> Result<Start, Error> {
        let nul = |at: Option<u32>| if self.plan.binary { None } else { at.map(|at| at as usize) };
        match scan::read_head_seeking(path, named, seeking)? {
            Sought::Bytes(head, whole) => Ok(self.started(head, whole)),
            Sought::NoneFound { first_nul, .. } if nul(first_nul).is_some_and(|at| at >= HEAD) => {
                self.read_head(path, named, seeking.max as usize)
            }
            Sought::NoneFound { size, first_nul } => {
                Ok(Start { head: Vec::new(), whole: true, nul: nul(first_nul), read: u64::from(size), ruled_out: true })
            }
        }
    }

    /// Whether the directory `dir`, which could not be read, lies past the
    /// resume position (not named before it); clears the position if so.
    fn past_resume(&mut self, dir: &std::path::Path) -> bool {
        match &self.resume {
            // Named at its end, or passed.
            Some((at, where_)) if dir < at.as_path() || (dir == at && *where_ == Where::End) => false,
            Some(_) => {
                self.resume = None;
                true
            }
            None => true,
        }
    }

    /// The item naming an ignore file not applied, and the position after it
    /// (`N<k>` at the path it is said at); `None` when a reopened search
    /// named it before its position.
    fn unapplied(&mut self, unapplied: Unapplied) -> Option<Walked> {
        let k = match &self.said {
            Some((at, k)) if *at == unapplied.at => k + 1,
            _ => 1,
        };
        self.said = Some((unapplied.at.clone(), k));
        if let Some((resume_path, at)) = &self.resume {
            if unapplied.at == *resume_path {
                // Said before the position, unless it is a boundary (nothing
                // done there) or a later one at the same place.
                let before = match at {
                    Where::Start => false,
                    Where::Noted(done) => k <= *done,
                    Where::Line(..) | Where::End => true,
                };
                if before {
                    return None;
                }
            } else if unapplied.at < *resume_path {
                return None;
            } else {
                self.resume = None;
            }
        }
        self.counts.ignore_files_skipped += 1;
        let mut path_json = String::new();
        render::push_str(&mut path_json, &unapplied.file.to_string_lossy());
        let item = render::notice(&path_json, "not_applied", &unapplied.reason());
        Some(Walked::Unapplied(item, encode(&self.counts, Where::Noted(k), &unapplied.at.to_string_lossy())))
    }

    /// Queues the item naming the file `name` as not searched (or not past
    /// a point), for `why`; its position is the file's end.
    fn not_searched(&mut self, name: &mut Shown, why: &str) {
        let json = render::notice(name.json(), "not_searched", why);
        self.queue.push_back((Queued { json, next: None, matches: 0 }, false, name.text()));
    }

    /// Searches on in the current file: queues the next batch of items, or
    /// finishes the file and returns its name. Reports the bytes searched
    /// either way.
    fn search_current(&mut self) -> Result<Option<Shown>, Error> {
        let mut cur = self.current.take().expect("a file being searched");
        if cur.check_resume {
            cur.check_resume = false;
            if let Some(file) = &mut cur.file {
                check_line_start(file, cur.byte, &cur.name.path)?;
            }
        }
        let check = !self.plan.binary;
        // ripgrep's rule: a NUL byte in the first `HEAD` bytes, and the file is binary.
        if cur.byte == 0 && cur.start.nul.is_some_and(|at| at < HEAD) {
            self.counts.binary_files += 1;
            self.scanned.add(1, cur.start.read);
            return Ok(Some(cur.name));
        }
        if cur.start.ruled_out {
            self.scanned.add(1, cur.start.read);
            return Ok(Some(cur.name));
        }
        // What lies in `head` from the byte searched on, then the rest of the file.
        let from = (cur.byte as usize).min(cur.start.head.len());
        let rest_at = cur.byte.max(cur.start.head.len() as u64);
        let rest = match (cur.start.whole, &mut cur.file) {
            (true, _) => Ok(None),
            (false, Some(file)) => file.seek(SeekFrom::Start(rest_at)).map(|_| cur.file.as_mut()),
            (false, None) => File::open(&cur.name.path)
                .and_then(|mut file| file.seek(SeekFrom::Start(rest_at)).map(|_| file))
                .map(|file| Some(cur.file.insert(file))),
        };
        let rest = match rest {
            Ok(rest) => rest,
            Err(e) => {
                self.counts.errors += 1;
                self.scanned.add(1, 0);
                self.not_searched(&mut cur.name, &format!("it could not be read: {e}"));
                return Ok(Some(cur.name));
            }
        };
        let settings = Settings {
            mode: self.plan.mode,
            matcher: &self.plan.matcher,
            multiline: self.plan.searcher.multi_line_with_matcher(&self.plan.matcher),
            before: self.plan.before > 0,
            after: self.plan.after,
            max_line: self.plan.max_line,
            max_items: self.plan.batch_items,
            max_bytes: self.plan.batch_bytes,
        };
        let mut out = VecDeque::new();
        let head = &cur.start.head[from..];
        let mut sink = Collector::new(&settings, &mut cur.name, cur.line - 1, cur.byte, &mut out);
        let (result, tripped, failed, served) = match rest {
            // The head is the whole file and holds no NUL byte: searched
            // where it lies, not copied through the searcher's buffer.
            None if cur.start.nul.is_none() => {
                let result = self.plan.searcher.search_slice(&self.plan.matcher, head, &mut sink);
                (result, false, false, head.len() as u64)
            }
            rest => {
                let mut guard = match cur.start.nul {
                    // Past `HEAD`: the lines before the NUL's line are searched.
                    Some(_) => Guard::with_unchecked_head(Rest(rest), head, check),
                    None => Guard::new(Rest(rest), head, check),
                };
                let result = self.plan.searcher.search_reader(&self.plan.matcher, &mut guard, &mut sink);
                (result, guard.tripped(), guard.failed(), guard.served())
            }
        };
        let (mut why, stopped) = (None, result.is_err());
        if let Err(e) = result {
            sink.flush();
            if tripped {
                self.counts.binary_files += 1;
            } else {
                self.counts.errors += 1;
                why = Some(match failed {
                    true => format!("it could not be read past byte {}: {e}", cur.byte + served),
                    false => self.plan.heap.exceeded(settings.multiline),
                });
            }
        }
        // A search stopped by an error ends the file: the item `flush`
        // completed is its last, even when it filled the batch.
        let (paused, count) = (if stopped { None } else { sink.paused }, sink.count);
        match self.plan.mode {
            OutputMode::Content => {}
            OutputMode::FilesWithMatches | OutputMode::Count if count > 0 => {
                let mut json = String::from("{\"path\":");
                json.push_str(cur.name.json());
                if self.plan.mode == OutputMode::Count {
                    render::push_num(&mut json, "count", count);
                }
                json.push('}');
                out.push_back(Queued { json, next: None, matches: count });
            }
            _ => {}
        }
        for item in out {
            let first = !cur.queued_any;
            cur.queued_any = true;
            self.queue.push_back((item, first, cur.name.text()));
        }
        if let Some(why) = why {
            self.not_searched(&mut cur.name, &why);
        }
        if let Some((line, byte)) = paused {
            // The searcher read ahead of the pause; the next run rereads that.
            self.scanned.add(0, byte.saturating_sub(cur.byte));
            (cur.line, cur.byte) = (line, byte);
            self.current = Some(cur);
            return Ok(None);
        }
        self.scanned.add(1, served);
        Ok(Some(cur.name))
    }
}

/// How far `start_next_file` got.
enum Walked {
    /// A file is open to search.
    Opened,
    /// The walk got past this path: files it left out up to it (see
    /// `walk::Next::Passed`).
    Passed(PathBuf),
    /// A file could not be read: the item saying so is queued.
    Said,
    /// An ignore file was not applied: the item saying so, and the position
    /// after it.
    Unapplied(String, String),
    /// The walk is over.
    End,
}

/// The part of a file past its head: nothing when the head was all of it.
struct Rest<'a>(Option<&'a mut File>);

impl Read for Rest<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.as_mut().map_or(Ok(0), |file| file.read(buf))
    }
}

/// Checks that a reopened search resumes at the start of a line of `path`
/// (or at its end): otherwise the file changed since the position was made.
fn check_line_start(file: &mut File, byte: u64, path: &std::path::Path) -> Result<(), Error> {
    if byte == 0 {
        return Ok(());
    }
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut last = [0u8];
    let ok = byte == size
        || (byte < size && file.seek(SeekFrom::Start(byte - 1)).is_ok() && file.read_exact(&mut last).is_ok())
            && last[0] == b'\n';
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::Stale,
            format!("`{}` changed since the search was paged; start the search again", path.display()),
        ))
    }
}

impl ItemSource for GrepSource {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        items::without_checkpoints(self)
    }

    /// Items, and after `CHECKPOINT`'s work without one, a checkpoint at
    /// the end of the file last searched.
    fn next_step(&mut self) -> Result<Option<Step>, Error> {
        loop {
            if let Some((item, first, path)) = self.queue.pop_front() {
                if first {
                    self.counts.files_matched += 1;
                }
                self.counts.matches += item.matches;
                self.pace.reset();
                let at = item.next.map_or(Where::End, |(line, byte)| Where::Line(line, byte));
                return Ok(Some(Step::Item(item.json, encode(&self.counts, at, &path))));
            }
            if self.current.is_some() {
                let before = self.scanned;
                let finished = self.search_current()?;
                let (files, bytes) = (self.scanned.files - before.files, self.scanned.bytes - before.bytes);
                self.pace.add(files as u32, bytes);
                if let Some(mut name) = finished
                    && self.queue.is_empty()
                    && self.pace.due()
                {
                    return Ok(Some(Step::Checkpoint(encode(&self.counts, Where::End, &name.text()))));
                }
            } else {
                match self.start_next_file()? {
                    Walked::Opened | Walked::Said => {}
                    Walked::Unapplied(item, after) => {
                        self.pace.reset();
                        return Ok(Some(Step::Item(item, after)));
                    }
                    Walked::Passed(path) => {
                        self.pace.reset();
                        let at = encode(&self.counts, Where::End, &path.to_string_lossy());
                        return Ok(Some(Step::Checkpoint(at)));
                    }
                    Walked::End => {
                        self.done = true;
                        return Ok(None);
                    }
                }
            }
        }
    }
}
