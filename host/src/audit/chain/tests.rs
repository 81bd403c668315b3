//! The chain's unit tests: appends, rotation, anchors, torn and cut lines.

use super::*;
use serde_json::json;

fn event(n: u64) -> Map<String, Value> {
    json!({ "event": "test", "n": n }).as_object().unwrap().clone()
}

#[test]
fn lines_chain_from_the_genesis_and_each_hash_covers_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1 << 20, 3).unwrap();
    for n in 0..3 {
        chain.append(event(n)).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let first = check_line(lines[0]).unwrap();
    assert_eq!((first.seq, first.prev.as_str()), (1, GENESIS));
    let second = check_line(lines[1]).unwrap();
    assert_eq!((second.seq, second.prev), (2, first.hash));
    assert!(lines[2].starts_with(r#"{"seq":3,"event":"test","n":2,"prev":""#), "{}", lines[2]);
    let edited = lines[1].replace("\"n\":1", "\"n\":7");
    assert!(check_line(&edited).is_err());
}

#[test]
fn rotation_keeps_the_chain_and_the_newest_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 300, 2).unwrap();
    for n in 0..12 {
        chain.append(event(n)).unwrap();
    }
    let rotated = |k| dir.path().join(rotated("audit.log", k));
    assert!(rotated(2).exists() && !rotated(3).exists(), "two rotated files kept");
    let newest_rotated = std::fs::read_to_string(rotated(1)).unwrap();
    let current = std::fs::read_to_string(&path).unwrap();
    let last_before = check_line(newest_rotated.lines().last().unwrap()).unwrap();
    let first_after = check_line(current.lines().next().unwrap()).unwrap();
    assert_eq!(first_after.prev, last_before.hash, "the chain goes on in the new file");
    assert_eq!(first_after.seq, last_before.seq + 1);
    // A new writer (another process, a restart) continues it too.
    let again = Chain::open(&path, 300, 2).unwrap();
    again.append(event(99)).unwrap();
    let current = std::fs::read_to_string(&path).unwrap();
    assert_eq!(check_line(current.lines().last().unwrap()).unwrap().seq, 13);
}

#[test]
fn two_writers_rotating_in_turn_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (a, b) = (Chain::open(&path, 400, 50).unwrap(), Chain::open(&path, 400, 50).unwrap());
    for n in 0..40 {
        let writer = if n % 3 == 0 { &a } else { &b };
        writer.append(event(n)).unwrap();
    }
    let mut files: Vec<PathBuf> =
        (1..=50).map(|k| dir.path().join(rotated("audit.log", k))).filter(|f| f.exists()).collect();
    assert!(files.len() > 3, "rotated several times");
    files.reverse();
    files.push(path);
    let all: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let verified = crate::audit::verify::verify(&all, crate::audit::verify::Anchoring::Beside).unwrap();
    assert_eq!((verified.lines, verified.last_seq, verified.from_genesis), (40, 40, true));
}

#[test]
fn a_writer_goes_on_from_the_anchor_when_the_log_ends_where_it_says_else_from_the_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (a, b) = (Chain::open(&path, 1 << 20, 1).unwrap(), Chain::open(&path, 1 << 20, 1).unwrap());
    a.append(event(0)).unwrap();
    let anchor = Anchor::read(&a.anchor).unwrap().unwrap();
    assert_eq!(anchor.end, Some(std::fs::metadata(&path).unwrap().len()), "the anchor says where the log ends");
    b.append(event(1)).unwrap();
    // A writer killed between its line and its anchor: the anchor lags.
    let lagging = Anchor::read(&a.anchor).unwrap().unwrap();
    a.append(event(2)).unwrap();
    lagging.write(&a.anchor).unwrap();
    b.append(event(3)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Checked> = text.lines().map(|l| check_line(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|l| l.seq).collect::<Vec<_>>(), [1, 2, 3, 4], "no `cut` line: nothing was cut");
    for pair in lines.windows(2) {
        assert_eq!(pair[1].prev, pair[0].hash);
    }
    let verified = crate::audit::verify::verify(&[&path], crate::audit::verify::Anchoring::Beside).unwrap();
    assert_eq!(verified.lines, 4);
}

#[test]
fn a_lagging_anchor_of_the_file_before_a_rotation_is_not_taken_for_the_new_one_of_the_same_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let probe = Chain::open(&dir.path().join("probe.log"), 1 << 20, 1).unwrap();
    probe.append(event(0)).unwrap();
    let size = std::fs::metadata(dir.path().join("probe.log")).unwrap().len();
    // Every line of these events is `size` bytes: the second one rotates.
    let (a, b) = (Chain::open(&path, size + 1, 3).unwrap(), Chain::open(&path, size + 1, 3).unwrap());
    a.append(event(0)).unwrap();
    let before = Anchor::read(&a.anchor).unwrap().unwrap();
    b.append(event(1)).unwrap();
    // `b` rotated and wrote one line of `size` bytes into the new log, and
    // was killed before its anchor: the anchor still names the old file.
    before.write(&a.anchor).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before.end.unwrap(), "the same size");
    a.append(event(2)).unwrap();
    // Each line filled a file: `a`'s went into a third.
    let (older, newer) = (dir.path().join(rotated("audit.log", 2)), dir.path().join(rotated("audit.log", 1)));
    let files = [older.as_path(), newer.as_path(), path.as_path()];
    let verified = crate::audit::verify::verify(&files, crate::audit::verify::Anchoring::Beside).unwrap();
    assert_eq!((verified.lines, verified.last_seq), (3, 3), "one chain, no seq given twice");
}

#[test]
fn a_batch_past_the_rotation_size_goes_on_in_the_next_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1000, 10).unwrap();
    let bodies: Vec<String> = (0..30).map(|n| fields_text(event(n))).collect();
    chain.write(&bodies).unwrap();
    let mut files: Vec<PathBuf> =
        (1..=10).rev().map(|k| dir.path().join(rotated("audit.log", k))).filter(|f| f.exists()).collect();
    files.push(path);
    assert!(files.len() > 2, "one batch rotated the log more than once");
    for file in &files {
        assert!(std::fs::metadata(file).unwrap().len() <= 1000, "{} is over its size", file.display());
    }
    let all: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let verified = crate::audit::verify::verify(&all, crate::audit::verify::Anchoring::Beside).unwrap();
    assert_eq!((verified.lines, verified.last_seq), (30, 30));
}

#[test]
fn a_torn_last_line_is_cut_off_and_the_chain_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1 << 20, 1).unwrap();
    chain.append(event(0)).unwrap();
    let whole = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{whole}{{\"seq\":2,\"event\":\"te")).unwrap();
    chain.append(event(1)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Checked> = text.lines().map(|l| check_line(l).unwrap()).collect();
    assert_eq!((lines.len(), lines[1].seq), (2, 2));
    assert_eq!(lines[1].prev, lines[0].hash);
}

#[test]
fn a_damaged_last_line_does_not_stop_the_trail_and_verify_still_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1 << 20, 1).unwrap();
    chain.append(event(0)).unwrap();
    let whole = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, whole.replace("\"n\":0", "\"n\":5")).unwrap();
    chain.append(event(1)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let second = check_line(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(second.seq, 2);
    let broken = crate::audit::verify::verify(&[&path], crate::audit::verify::Anchoring::Beside).unwrap_err();
    assert_eq!(broken.line, 1, "the edited line is named");
}

#[test]
fn threads_of_one_process_append_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = std::sync::Arc::new(Chain::open(&path, 1 << 30, 1).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let chain = std::sync::Arc::clone(&chain);
            std::thread::spawn(move || {
                for n in 0..50 {
                    let mut e = event(t * 100 + n);
                    e.insert("pad".into(), Value::String("x".repeat(3000)));
                    chain.append(e).unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    let seqs: Vec<u64> = text.lines().map(|l| check_line(l).unwrap().seq).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<u64>>());
}

#[test]
fn a_line_longer_than_the_first_tail_read_is_found_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1 << 30, 1).unwrap();
    let mut big = event(0);
    big.insert("pad".into(), Value::String("x".repeat(100_000)));
    chain.append(big).unwrap();
    chain.append(event(1)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let seqs: Vec<u64> = text.lines().map(|l| check_line(l).unwrap().seq).collect();
    assert_eq!(seqs, [1, 2]);
}

#[test]
fn the_path_is_looked_at_for_its_inode_and_size_as_lstat_gives_them() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let chain = Chain::open(&path, 1 << 20, 1).unwrap();
    assert_eq!(chain.at_path().unwrap(), None, "no log yet");
    chain.append(event(1)).unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert_eq!(chain.at_path().unwrap(), Some((meta.ino(), meta.len())));
    // A log that is a link is the link, not its target (it is reopened at each write).
    let target = dir.path().join("elsewhere.log");
    std::fs::rename(&path, &target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let link = std::fs::symlink_metadata(&path).unwrap();
    assert_eq!(chain.at_path().unwrap(), Some((link.ino(), link.len())));
    assert_ne!(link.ino(), meta.ino());
}
