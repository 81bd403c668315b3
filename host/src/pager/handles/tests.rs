use super::*;

use std::time::Duration;

const TTL: u64 = 60;
const CAPS: Caps = Caps { results: 10_000, bytes: 256 << 20 };

fn dir_of(tmp: &tempfile::TempDir) -> Dir {
    Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap()
}

/// A directory store without the start's sweep (its own thread would race
/// these tests' files).
fn dir_store(tmp: &tempfile::TempDir, caps: Caps) -> Handles {
    Handles::unswept(Store::Dir(dir_of(tmp)), TTL, caps)
}

fn stores() -> Vec<(tempfile::TempDir, Handles)> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = dir_store(&tmp, CAPS);
    let memory = Handles::unswept(Store::memory(), TTL, CAPS);
    vec![(tempfile::tempdir().unwrap(), memory), (tmp, dir)]
}

fn in_a_minute() -> u64 {
    now_secs() + 60
}

/// A mint of `cursor` for `page` of `stream`, resuming at `position`.
fn mint<'a>(stream: Option<&'a str>, page: u64, cursor: &'a str, position: &'a str) -> Mint<'a> {
    Mint { stream, page, cursor, position, expires: in_a_minute() }
}

#[test]
fn a_handle_is_short_unguessable_and_resolves_to_its_cursor() {
    for (_tmp, handles) in stores() {
        let a = handles.mint(mint(None, 1, "c1.cursor-a", "p")).unwrap();
        let b = handles.mint(mint(None, 1, "c1.cursor-b", "p")).unwrap();
        assert!(is_handle(&a) && a.len() == 37 && a.ends_with(".1"), "{a}");
        assert_ne!(a, b);
        assert_eq!(handles.resolve(&a).unwrap(), "c1.cursor-a");
        assert_eq!(handles.resolve(&b).unwrap(), "c1.cursor-b");
    }
}

#[test]
fn every_page_of_a_result_keeps_its_own_handle_in_one_file() {
    for (tmp, handles) in stores() {
        let first = handles.mint(mint(None, 1, "c1.page-1", "p1")).unwrap();
        let stream = stream_of(&first).unwrap().to_string();
        // Long cursors, so the later lookups read more than one tail of the file.
        let long = |n: u64| format!("c1.page-{n}-{}", "x".repeat(3000));
        let later: Vec<String> =
            (2..40).map(|n| handles.mint(mint(Some(&stream), n, &long(n), &format!("p{n}"))).unwrap()).collect();
        assert!(later.iter().all(|h| stream_of(h) == Some(stream.as_str())), "{later:?}");
        assert_eq!(handles.resolve(&first).unwrap(), "c1.page-1", "an early page still resolves");
        assert_eq!(handles.resolve(&later[10]).unwrap(), long(12));
        assert_eq!(handles.resolve(&later[37]).unwrap(), long(39));
        if let Store::Dir(_) = handles.store {
            let files = std::fs::read_dir(tmp.path()).unwrap().count();
            assert_eq!(files, 1, "one file for the whole result");
        }
    }
}

#[test]
fn replaying_a_page_writes_nothing_and_another_page_size_starts_a_new_result() {
    for (tmp, handles) in stores() {
        let first = handles.mint(mint(None, 2, "c1.page-2", "after-1")).unwrap();
        let stream = stream_of(&first).unwrap().to_string();
        let next = handles.mint(mint(Some(&stream), 3, "c1.page-3", "after-2")).unwrap();
        let file = tmp.path().join(&stream);
        let size = |dir_store: bool| if dir_store { std::fs::metadata(&file).unwrap().len() } else { 0 };
        let on_disk = matches!(handles.store, Store::Dir(_));
        let before = size(on_disk);
        // A client looping on the handle of page 2 mints page 3 again and again.
        for _ in 0..500 {
            let again = handles.mint(mint(Some(&stream), 3, "c1.page-3-later", "after-2")).unwrap();
            assert_eq!(again, next, "the same handle");
        }
        assert_eq!(size(on_disk), before, "a replay appends nothing");
        assert_eq!(handles.resolve(&next).unwrap(), "c1.page-3", "the first cursor stays");
        // The same page at another position (another page size) is another result.
        let elsewhere = handles.mint(mint(Some(&stream), 3, "c1.other", "after-2-bigger")).unwrap();
        assert_ne!(stream_of(&elsewhere), Some(stream.as_str()));
        assert_eq!(handles.resolve(&elsewhere).unwrap(), "c1.other");
        assert_eq!(handles.resolve(&next).unwrap(), "c1.page-3");
    }
}

#[test]
fn a_result_keeps_at_most_its_pages_and_bytes() {
    for (_tmp, handles) in stores() {
        let first = handles.mint(mint(None, 1, "c1.x", "p")).unwrap();
        let stream = stream_of(&first).unwrap().to_string();
        let past = handles.mint(mint(Some(&stream), MAX_RESULT_PAGES + 1, "c1.y", "q"));
        assert!(matches!(past, Err(HandleError::Full)), "{past:?}");
        let big = "c".repeat(600 << 10);
        let mut minted = 0;
        let full = loop {
            match handles.mint(mint(Some(&stream), minted + 2, &big, &format!("p{minted}"))) {
                Ok(_) => minted += 1,
                Err(e) => break e,
            }
            assert!(minted < 100, "no end to one result's bytes");
        };
        assert!(matches!(full, HandleError::Full), "{full}");
        assert!(minted >= 5 && minted * (600 << 10) <= MAX_RESULT_BYTES, "{minted} pages of 600 KiB");
    }
}

#[test]
fn past_the_store_caps_the_oldest_results_are_evicted_first() {
    let caps = Caps { results: 4, bytes: 1 << 20 };
    let tmp = tempfile::tempdir().unwrap();
    let memory = Handles::unswept(Store::memory(), TTL, caps);
    for handles in [&memory, &dir_store(&tmp, caps)] {
        let mut minted = Vec::new();
        for n in 0..4 {
            let handle = handles.mint(mint(None, 1, &format!("c1.result-{n}"), "p")).unwrap();
            if let Store::Dir(_) = handles.store {
                // Distinct write times, oldest first, whatever the clock's grain.
                let written = SystemTime::now() - Duration::from_secs(100 - n);
                let file = std::fs::File::options().write(true).open(tmp.path().join(stream_of(&handle).unwrap()));
                file.unwrap().set_modified(written).unwrap();
            }
            minted.push(handle);
        }
        let fifth = handles.mint(mint(None, 1, "c1.result-4", "p")).unwrap();
        assert!(matches!(handles.resolve(&minted[0]), Err(HandleError::Unknown)), "the oldest is evicted");
        for kept in minted[1..].iter().chain([&fifth]) {
            assert!(handles.resolve(kept).is_ok(), "{kept} is kept");
        }
        if let Store::Dir(_) = handles.store {
            assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 4);
        }
    }
    // The bytes cap too: results of 300 KiB, at most 1 MiB in all.
    let tmp = tempfile::tempdir().unwrap();
    let handles = dir_store(&tmp, caps);
    let big = "c".repeat(300 << 10);
    let first = handles.mint(mint(None, 1, &big, "p")).unwrap();
    let written = SystemTime::now() - Duration::from_secs(100);
    let file = std::fs::File::options().write(true).open(tmp.path().join(stream_of(&first).unwrap()));
    file.unwrap().set_modified(written).unwrap();
    for _ in 0..3 {
        handles.mint(mint(None, 1, &big, "p")).unwrap();
    }
    assert!(matches!(handles.resolve(&first), Err(HandleError::Unknown)), "the oldest is evicted for bytes");
    let held: u64 = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(held <= caps.bytes, "{held} bytes held");
}

#[test]
fn unknown_mistyped_and_expired_handles_are_refused() {
    for (_tmp, handles) in stores() {
        let good = handles.mint(mint(None, 3, "c1.x", "p")).unwrap();
        let mut flipped = good.clone().into_bytes();
        flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        let other_page = good.replace(".3", ".4");
        let leading_zero = good.replace(".3", ".03");
        let no_page = good.trim_end_matches(".3").to_string();
        for bad in [
            &flipped,
            "h1_",
            "h1_zz.1",
            &format!("{good}0"),
            &good.to_uppercase(),
            &other_page,
            &leading_zero,
            &no_page,
        ] {
            assert!(matches!(handles.resolve(bad), Err(HandleError::Unknown)), "{bad}");
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let short = dir_store(&tmp, CAPS);
    let handle = short.mint(Mint { expires: now_secs(), ..mint(None, 1, "c1.x", "p") }).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert!(matches!(short.resolve(&handle), Err(HandleError::Expired)));
}

#[test]
fn lines_of_the_earlier_format_still_resolve() {
    let tmp = tempfile::tempdir().unwrap();
    let stream = "a".repeat(DIGITS);
    std::fs::write(tmp.path().join(&stream), format!("2 {} c1.old\n", in_a_minute())).unwrap();
    let handles = dir_store(&tmp, CAPS);
    assert_eq!(handles.resolve(&format!("h1_{stream}.2")).unwrap(), "c1.old");
}

#[test]
fn a_directory_store_is_swept_of_results_older_than_a_cursor_lives() {
    let tmp = tempfile::tempdir().unwrap();
    let handles = dir_store(&tmp, CAPS);
    let old_result = "0".repeat(DIGITS);
    let old_format = format!("{PREFIX}{}", "1".repeat(DIGITS));
    let age = |name: &str| {
        let long_ago = SystemTime::now() - Duration::from_secs(TTL + 3600);
        std::fs::File::options().write(true).open(tmp.path().join(name)).unwrap().set_modified(long_ago).unwrap();
    };
    for name in [&old_result, &old_format] {
        std::fs::write(tmp.path().join(name), "1 1 c1.old\n").unwrap();
        age(name);
    }
    handles.mint(mint(None, 1, "c1.fresh", "p")).unwrap();
    assert!(tmp.path().join(&old_result).exists(), "not yet due");
    handles.swept.store(0, Ordering::Relaxed);
    let kept = handles.mint(mint(None, 1, "c1.fresh", "p")).unwrap();
    let gone = |name: &str| !tmp.path().join(name).exists();
    let wait_for = |names: &[&str]| {
        let started = std::time::Instant::now();
        while !names.iter().all(|n| gone(n)) && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for(&[&old_result, &old_format]);
    assert!(gone(&old_result) && gone(&old_format), "results past a cursor's life are swept");
    assert_eq!(handles.resolve(&kept).unwrap(), "c1.fresh");
    // A restart sweeps too.
    std::fs::write(tmp.path().join(&old_result), "1 1 c1.old\n").unwrap();
    age(&old_result);
    let _restarted = Handles::new(Store::Dir(dir_of(&tmp)), TTL, CAPS);
    wait_for(&[&old_result]);
    assert!(gone(&old_result), "a restart sweeps results past a cursor's life");
}
