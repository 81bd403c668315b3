//! The `scan` interface: a directory's entries with the types the directory
//! read gives, without the stat per entry of WASI's `read-directory`, and a
//! file's first bytes in one call, or only that it holds none of a search's
//! needles (`read-head-seeking`). Bounded by the call's own grants (a path is
//! resolved under a granted root's capability, following a symlink at its end
//! only when asked, and then inside the root) and by the deny rules (a denied
//! path is refused, denied entries are left out).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptionsExt};

use super::bindings::cordon::tool::scan::{Entry, EntryKind, Host, Seeking, SoughtHead, WithoutNeedles};
use super::bindings::{WitError, WitErrorCode};
use super::call::CallState;
use super::host_files::io_error;
use super::listing;
use crate::policy::Judge;

impl Host for CallState {
    fn read_head(&mut self, path: String, follow: bool, max: u32) -> Result<(Vec<u8>, bool), WitError> {
        self.head(&path, follow, max, 0)
    }

    fn read_head_seeking(&mut self, path: String, follow: bool, seeking: Seeking) -> Result<SoughtHead, WitError> {
        let Seeking { max, needles, nul_probe, ascii_case_insensitive } = seeking;
        // Bad needles are refused before the file is opened.
        self.seeker().prepare(needles, ascii_case_insensitive)?;
        let (bytes, whole) = self.head(&path, follow, max, nul_probe)?;
        if !whole || self.seeker().finds(&bytes) {
            return Ok(SoughtHead::Bytes((bytes, whole)));
        }
        let at = |n: usize| u32::try_from(n).expect("a head is at most 1 MiB");
        let first_nul = memchr::memchr(0, &bytes).map(at);
        Ok(SoughtHead::NoneFound(WithoutNeedles { size: at(bytes.len()), first_nul }))
    }

    fn read_dir(&mut self, path: String, follow: bool, max: u32) -> Result<Vec<Entry>, WitError> {
        let max = max.min(MAX_LISTED);
        let (root, rel) = self.locate(&path, false)?;
        // With rules, the directory is checked where it really is too (a
        // symlink anywhere on its path resolved, once), and so are its entries.
        let deny = Arc::clone(self.policy());
        let rules = !deny.is_empty();
        let real = if rules { deny.real_relative(Path::new(&path)) } else { None };
        let rule = deny.check(Path::new(&path), false).or_else(|| deny.denied_relative(real.as_deref()?));
        if let Some(rule) = rule {
            return Err(WitError {
                code: WitErrorCode::PermissionDenied,
                message: format!("`{path}` is denied by the server's rule `{rule}`"),
            });
        }
        let mut entries = Vec::new();
        let mut keep = |name: String, kind: EntryKind| {
            let denied = |deny: &Judge| {
                deny.check(&Path::new(&path).join(&name), false).is_some()
                    || real.as_ref().is_some_and(|real| deny.denied_relative(&real.join(&name)).is_some())
            };
            if rules && denied(&deny) {
                return Ok(());
            }
            if entries.len() == max as usize {
                return Err(WitError {
                    code: WitErrorCode::TooLarge,
                    message: format!("`{path}` holds more than {max} entries"),
                });
            }
            entries.push(Entry { name, kind });
            Ok(())
        };
        let dir = self.root(root, &path)?;
        listing::list(dir, &rel, follow, &mut keep).map_err(|failed| match failed {
            listing::Failed::Io(e) => io_error(&path, &e),
            listing::Failed::Kept(e) => e,
        })?;
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

/// The first `max` bytes of the regular file `file` and whether they are all
/// of it: `max + 1` are asked for (one more tells whether it goes on), in one
/// `read` when the file holds what its size (`len`, from its `fstat`) says: a
/// read that gives exactly that, less than asked, is at the end. Otherwise
/// (the file grew or shrank meanwhile, a filesystem that reads short) it
/// reads on until the end or `max + 1`, as `read_to_end` does; where
/// `read_to_end` always reads once more to see the end, a small file here
/// costs one `read`, not two. With a `probe`, a file larger than it is read
/// in two: its first `probe` bytes, and only when they hold no NUL byte the
/// rest; when they do, they alone are given, not whole, so a binary file is
/// read no further than a search needs to tell it.
fn head_of(file: &cap_std::fs::File, len: u64, max: usize, probe: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let want = usize::try_from(len).unwrap_or(usize::MAX).min(max) + 1;
    let mut bytes = Vec::with_capacity(want);
    if probe > 0 && probe + 1 < want {
        bytes.resize(probe, 0);
        let read = loop {
            match rustix::io::read(file, &mut bytes[..]) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(read) => break read,
            }
        };
        bytes.truncate(read);
        if read == probe && memchr::memchr(0, &bytes).is_some() {
            return Ok((bytes, false));
        }
    }
    loop {
        match rustix::io::read(file, rustix::buffer::spare_capacity(&mut bytes)) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => break,
        }
    }
    let at_end = bytes.len() < want && bytes.len() as u64 == len;
    if !at_end && bytes.len() <= max {
        Read::take(file, (max + 1 - bytes.len()) as u64).read_to_end(&mut bytes)?;
    }
    let whole = bytes.len() <= max;
    bytes.truncate(max);
    Ok((bytes, whole))
}

/// The most entries `read-dir` lists, whatever the tool asks.
const MAX_LISTED: u32 = 1 << 20;

/// The most bytes `read-head` reads.
const MAX_HEAD: u32 = 1 << 20;

impl CallState {
    /// `read-head`: the file's first `max` bytes, and whether that is all.
    /// With a `probe`, a file whose first `probe` bytes hold a NUL byte is
    /// read no further (see `head_of`).
    fn head(&mut self, path: &str, follow: bool, max: u32, probe: u32) -> Result<(Vec<u8>, bool), WitError> {
        let (root, rel) = self.locate(path, false)?;
        if let Some(rule) = self.policy().check(Path::new(path), true) {
            return Err(WitError {
                code: WitErrorCode::PermissionDenied,
                message: format!("`{path}` is denied by the server's rule `{rule}`"),
            });
        }
        let mut options = cap_std::fs::OpenOptions::new();
        let follow = if follow { FollowSymlinks::Yes } else { FollowSymlinks::No };
        // Non-blocking: a FIFO put where a file was must not hold the call in `open`.
        options.read(true).follow(follow).custom_flags(libc::O_NONBLOCK);
        let file = self.root(root, path)?.open_with(&rel, &options).map_err(|e| io_error(path, &e))?;
        let meta = file.metadata().map_err(|e| io_error(path, &e))?;
        if !meta.is_file() {
            return Err(WitError {
                code: WitErrorCode::Unsupported,
                message: format!("`{path}` is not a regular file"),
            });
        }
        let max = max.min(MAX_HEAD) as usize;
        head_of(&file, meta.len(), max, probe as usize).map_err(|e| io_error(path, &e))
    }
}

/// The needles `read-head-seeking` was last given, prepared once for the
/// many files a search asks about with the same ones.
#[derive(Default)]
pub struct Seeker {
    needles: Vec<Vec<u8>>,
    ascii_case_insensitive: bool,
    finder: Option<AhoCorasick>,
}

impl Seeker {
    /// Makes `needles` the ones looked for: checked and prepared, unless
    /// they are those of the last call.
    fn prepare(&mut self, needles: Vec<Vec<u8>>, ascii_case_insensitive: bool) -> Result<(), WitError> {
        if self.finder.is_some() && self.needles == needles && self.ascii_case_insensitive == ascii_case_insensitive {
            return Ok(());
        }
        let invalid = |message: String| WitError { code: WitErrorCode::InvalidArgument, message };
        cordon_contract::check_needles(&needles).map_err(invalid)?;
        let mut builder = AhoCorasick::builder();
        builder.ascii_case_insensitive(ascii_case_insensitive);
        let finder = builder.build(&needles).map_err(|e| invalid(format!("the needles cannot be looked for: {e}")))?;
        self.finder = Some(finder);
        self.needles = needles;
        self.ascii_case_insensitive = ascii_case_insensitive;
        Ok(())
    }

    /// Whether `bytes` hold one of the needles prepared.
    fn finds(&self, bytes: &[u8]) -> bool {
        self.finder.as_ref().is_some_and(|finder| finder.is_match(bytes))
    }
}

/// The granted roots opened as capabilities, each once per call.
#[derive(Default)]
pub struct OpenRoots(Vec<Option<Dir>>);

impl OpenRoots {
    /// The handle of grant `index` at `host`, opened on first use.
    pub fn get(&mut self, index: usize, host: &Path) -> std::io::Result<&Dir> {
        if self.0.len() <= index {
            self.0.resize_with(index + 1, || None);
        }
        if self.0[index].is_none() {
            self.0[index] = Some(crate::ambient::open_dir(host)?);
        }
        Ok(self.0[index].as_ref().expect("opened above"))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::policy::{DirSpec, Mode, Policy};
    use crate::runtime::{CallSignal, Capacity, Runtime};
    use crate::tool::Access;

    /// `root/` with a subdirectory, denied entries, a symlink inside and one
    /// out; `outside/` and the `root_evil` sibling beside it.
    fn fixture() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        for rel in ["root/sub/b.txt", "root/secret/k.pem", "root/.env", "root/a.txt", "outside/canary.txt"] {
            let path = base.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::create_dir_all(base.join("root_evil/inside")).unwrap();
        symlink("sub", base.join("root/link-in")).unwrap();
        symlink(base.join("outside"), base.join("root/link-out")).unwrap();
        symlink("../outside", base.join("root/sub/link-up")).unwrap();
        (dir, base.display().to_string())
    }

    /// A call's store granted `base/root` read-only, with `deny` rules.
    fn store(base: &str, deny: &[&str]) -> wasmtime::Store<CallState> {
        let root = DirSpec { path: format!("{base}/root").into(), mode: Mode::ReadOnly };
        let deny: Vec<String> = deny.iter().map(|rule| rule.to_string()).collect();
        let policy = Policy::new(&[root], &deny, false).unwrap();
        let limits = crate::limits::Limits::default();
        let capacity = Capacity { parked: 0, in_flight: 1, shards: 1, memory: usize::MAX };
        let runtime = Runtime::new(limits.call, capacity, None, Arc::clone(policy.judge())).unwrap();
        let grants = policy.grants(Access::Read, None);
        let deadline = Instant::now() + Duration::from_secs(5);
        let judge = Arc::clone(policy.judge());
        runtime
            .store(
                &crate::runtime::CallContext {
                    grants,
                    env: Default::default(),
                    net: Default::default(),
                    judge,
                    signal: Arc::new(CallSignal::new()),
                    deadline,
                },
                1,
            )
            .unwrap()
    }

    fn read_dir(base: &str, path: &str, follow: bool, max: u32) -> Result<Vec<String>, (WitErrorCode, String)> {
        let mut store = store(base, &["secret/", ".env"]);
        let listed = Host::read_dir(store.data_mut(), path.to_string(), follow, max);
        listed.map(|entries| entries.into_iter().map(|e| e.name).collect()).map_err(|e| (e.code, e.message))
    }

    #[test]
    fn lists_sorted_with_kinds_and_leaves_out_what_is_denied() {
        let (_dir, base) = fixture();
        let names = read_dir(&base, &format!("{base}/root"), false, 100).unwrap();
        assert_eq!(names, ["a.txt", "link-in", "link-out", "sub"], "no `.env`, no `secret`");
        let denied = read_dir(&base, &format!("{base}/root/secret"), false, 100).unwrap_err();
        assert_eq!(denied.0, WitErrorCode::PermissionDenied, "{denied:?}");
        let big = read_dir(&base, &format!("{base}/root"), false, 2).unwrap_err();
        assert_eq!(big.0, WitErrorCode::TooLarge, "{big:?}");
    }

    #[test]
    fn a_denied_directory_is_not_listed_through_a_symlink_on_the_way() {
        let (_dir, base) = fixture();
        std::fs::create_dir_all(format!("{base}/root/config/secret")).unwrap();
        std::fs::write(format!("{base}/root/config/secret/key"), "x").unwrap();
        symlink("config", format!("{base}/root/cfg")).unwrap();
        let mut store = store(&base, &["/config/secret"]);
        let mut listed = |path: &str| {
            let entries = Host::read_dir(store.data_mut(), format!("{base}/root/{path}"), true, 100);
            entries.map(|e| e.into_iter().map(|e| e.name).collect::<Vec<_>>()).map_err(|e| e.code)
        };
        assert_eq!(listed("config"), Ok(vec![]), "the anchored rule leaves `secret` out");
        assert_eq!(listed("cfg"), Ok(vec![]), "and out of the same directory reached through a link");
        assert_eq!(listed("cfg/secret"), Err(WitErrorCode::PermissionDenied));
        assert_eq!(listed("config/secret"), Err(WitErrorCode::PermissionDenied));
    }

    #[test]
    fn paths_outside_the_grants_and_symlinks_out_are_refused() {
        let (_dir, base) = fixture();
        let refused = [
            (format!("{base}/outside"), false),
            (format!("{base}/root_evil"), false),
            (format!("{base}/root_evil/inside"), true),
            (base.clone(), true),
            ("/".to_string(), true),
            (format!("{base}/root/../outside"), true),
            (format!("{base}/root/link-out"), true),
            (format!("{base}/root/link-out"), false),
            (format!("{base}/root/sub/link-up"), true),
            (format!("{base}/root/link-in/link-up"), true),
            ("root".to_string(), true),
        ];
        for (path, follow) in refused {
            let result = read_dir(&base, &path, follow, 100);
            assert!(result.is_err(), "{path} (follow {follow}) was listed: {result:?}");
            let (code, message) = result.unwrap_err();
            assert!(!message.contains("canary"), "{path}: {message}");
            assert_ne!(code, WitErrorCode::TooLarge);
        }
    }

    #[test]
    fn a_head_is_read_whole_when_the_file_is_not_the_size_its_stat_said() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ten.txt"), "0123456789").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let root = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let ten = root.open("ten.txt").unwrap();
        let head = |file: &cap_std::fs::File, len: u64, max: usize, probe: usize| {
            use std::io::{Seek, SeekFrom};
            (&mut &*file).seek(SeekFrom::Start(0)).unwrap();
            let (bytes, whole) = head_of(file, len, max, probe).unwrap();
            (String::from_utf8(bytes).unwrap(), whole)
        };
        let read = |text: &str, whole| (text.to_string(), whole);
        assert_eq!(head(&ten, 10, 64, 0), read("0123456789", true), "as its size said: one read");
        assert_eq!(head(&ten, 5, 64, 0), read("0123456789", true), "grown since its stat: read on to the end");
        assert_eq!(head(&ten, 20, 64, 0), read("0123456789", true), "shrunk since: the end is read");
        assert_eq!(head(&ten, 10, 4, 0), read("0123", false), "one byte past `max` says there is more");
        assert_eq!(head(&ten, 3, 4, 0), read("0123", false), "grown past `max`");
        assert_eq!(head(&root.open("empty.txt").unwrap(), 0, 64, 0), read("", true));
        // A probe: the first bytes looked at for a NUL byte before the rest is read.
        std::fs::write(dir.path().join("nul.bin"), "0123\0").unwrap();
        let nul = root.open("nul.bin").unwrap();
        assert_eq!(head(&ten, 10, 64, 4), read("0123456789", true), "no NUL in the probe: the rest read too");
        assert_eq!(head(&ten, 10, 64, 10), read("0123456789", true), "a probe as large as the file");
        assert_eq!(head(&nul, 5, 64, 5), read("0123\0", true), "a file no larger than the probe is read whole");
        assert_eq!(head(&nul, 5, 64, 4), read("0123\0", true), "the NUL past the probe");
        let long = "0\x001234567890123456789";
        std::fs::write(dir.path().join("long.bin"), long).unwrap();
        let long_file = root.open("long.bin").unwrap();
        assert_eq!(head(&long_file, 22, 64, 8), read("0\x00123456", false), "a NUL in the probe: no more read");
        assert_eq!(head(&long_file, 22, 64, 0), read(long, true));
        assert_eq!(
            head(&long_file, 22, 8, 8),
            read("0\x00123456", false),
            "`max` no larger than the probe: `max` bytes, not whole"
        );
        assert_eq!(head(&long_file, 3, 64, 8), read(long, true), "grown since its stat, the probe not used");
    }

    fn read_head(base: &str, path: &str, max: u32) -> Result<(Vec<u8>, bool), WitErrorCode> {
        let mut store = store(base, &["secret/", "*.pem"]);
        Host::read_head(store.data_mut(), path.to_string(), false, max).map_err(|e| e.code)
    }

    #[test]
    fn a_head_is_the_file_start_and_says_whether_it_is_all() {
        let (_dir, base) = fixture();
        std::fs::write(format!("{base}/root/ten.txt"), "0123456789").unwrap();
        let ten = format!("{base}/root/ten.txt");
        assert_eq!(read_head(&base, &ten, 64), Ok((b"0123456789".to_vec(), true)));
        assert_eq!(read_head(&base, &ten, 10), Ok((b"0123456789".to_vec(), true)));
        assert_eq!(read_head(&base, &ten, 4), Ok((b"0123".to_vec(), false)));
        symlink("ten.txt", format!("{base}/root/link-ten")).unwrap();
        symlink("link-in/../secret/k.pem", format!("{base}/root/link-pem")).unwrap();
        let fifo = std::ffi::CString::new(format!("{base}/root/fifo")).unwrap();
        // SAFETY: `fifo` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "a FIFO for the test");
        for (path, code) in [
            (format!("{base}/root/fifo"), WitErrorCode::Unsupported),
            (format!("{base}/root/sub"), WitErrorCode::Unsupported),
            (format!("{base}/outside/canary.txt"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/link-out/canary.txt"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/secret/k.pem"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/link-pem"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/link-ten"), WitErrorCode::Io),
            (format!("{base}/root/missing"), WitErrorCode::NotFound),
            (format!("{base}/root/../outside/canary.txt"), WitErrorCode::InvalidArgument),
        ] {
            assert_eq!(read_head(&base, &path, 64).map(|_| ()), Err(code), "{path}");
        }
    }

    /// `read-head-seeking` in a store of its own, its answer in words.
    fn seek(
        store: &mut wasmtime::Store<CallState>,
        path: &str,
        max: u32,
        needles: &[&[u8]],
        probe: u32,
    ) -> Result<String, WitErrorCode> {
        let needles = needles.iter().map(|n| n.to_vec()).collect();
        let seeking = Seeking { max, needles, nul_probe: probe, ascii_case_insensitive: false };
        match Host::read_head_seeking(store.data_mut(), path.to_string(), false, seeking) {
            Ok(SoughtHead::Bytes((bytes, whole))) => Ok(format!("bytes {:?} {whole}", String::from_utf8_lossy(&bytes))),
            Ok(SoughtHead::NoneFound(none)) => Ok(format!("none {} {:?}", none.size, none.first_nul)),
            Err(e) => Err(e.code),
        }
    }

    #[test]
    fn a_head_sought_gives_no_bytes_of_a_whole_file_without_a_needle() {
        let (_dir, base) = fixture();
        let text = format!("{base}/root/text.txt");
        std::fs::write(&text, "alpha\nbeta\0gamma\n").unwrap();
        std::fs::write(format!("{base}/root/plain.txt"), "alpha\n").unwrap();
        let mut store = store(&base, &["secret/", "*.pem"]);
        let mut folded = |ascii_case_insensitive| {
            let seeking = Seeking { max: 64, needles: vec![b"ALPHA".to_vec()], nul_probe: 0, ascii_case_insensitive };
            matches!(Host::read_head_seeking(store.data_mut(), text.clone(), false, seeking), Ok(SoughtHead::Bytes(_)))
        };
        assert!(folded(true), "`alpha` found for `ALPHA` in any ASCII case");
        assert!(!folded(false), "and not otherwise: the needles are prepared again");
        let big = format!("{base}/root/big.bin");
        std::fs::write(&big, [&b"ab\0"[..], &[b'c'; 100]].concat()).unwrap();
        let mut probed = |path: &str, probe| seek(&mut store, path, 64, &[b"zz"], probe);
        assert_eq!(probed(&big, 8), Ok(r#"bytes "ab\0ccccc" false"#.into()), "a NUL in the probe: read no further");
        assert_eq!(probed(&text, 8), Ok("none 17 Some(10)".into()), "a NUL past the probe");
        let first_64 = String::from_utf8([&b"ab\0"[..], &[b'c'; 61]].concat()).unwrap();
        assert_eq!(probed(&big, 0), Ok(format!("bytes {first_64:?} false")), "no probe: `max` read");
        let mut seek = |path: &str, max, needles: &[&[u8]]| seek(&mut store, path, max, needles, 0);
        assert_eq!(seek(&text, 64, &[b"beta"]), Ok(r#"bytes "alpha\nbeta\0gamma\n" true"#.into()));
        assert_eq!(seek(&text, 64, &[b"delta", b"gamma"]), Ok(r#"bytes "alpha\nbeta\0gamma\n" true"#.into()));
        assert_eq!(seek(&text, 64, &[b"delta", b"omega"]), Ok("none 17 Some(10)".into()));
        assert_eq!(seek(&format!("{base}/root/plain.txt"), 64, &[b"delta"]), Ok("none 6 None".into()));
        assert_eq!(seek(&text, 4, &[b"delta"]), Ok(r#"bytes "alph" false"#.into()), "not the whole file");
        assert_eq!(seek(&text, 17, &[b"delta"]), Ok("none 17 Some(10)".into()), "exactly the whole file");
        let long = [b'x'; 257];
        let seventeen: Vec<&[u8]> = vec![b"x"; 17];
        let (most, longest) = (vec![b"zz".as_slice(); 16], [b'z'; 256]);
        assert_eq!(seek(&text, 64, &most), Ok("none 17 Some(10)".into()), "16 needles");
        assert_eq!(seek(&text, 64, &[&longest]), Ok("none 17 Some(10)".into()), "one of 256 bytes");
        for needles in [&[][..], &[b"".as_slice()], &[long.as_slice()], &seventeen[..]] {
            assert_eq!(seek(&text, 64, needles), Err(WitErrorCode::InvalidArgument), "{needles:?}");
            let missing = format!("{base}/root/missing");
            assert_eq!(seek(&missing, 64, needles), Err(WitErrorCode::InvalidArgument), "refused before the file");
        }
        for (path, code) in [
            (format!("{base}/root/secret/k.pem"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/link-out/canary.txt"), WitErrorCode::PermissionDenied),
            (format!("{base}/outside/canary.txt"), WitErrorCode::PermissionDenied),
            (format!("{base}/root/sub"), WitErrorCode::Unsupported),
            (format!("{base}/root/missing"), WitErrorCode::NotFound),
        ] {
            assert_eq!(seek(&path, 64, &[b"canary"]), Err(code), "{path}");
        }
    }

    #[test]
    fn a_symlink_inside_the_root_is_followed_only_when_asked() {
        let (_dir, base) = fixture();
        let link = format!("{base}/root/link-in");
        assert_eq!(read_dir(&base, &link, true, 100).unwrap(), ["b.txt", "link-up"]);
        assert!(read_dir(&base, &link, false, 100).is_err(), "not followed without `follow`");
    }
}
