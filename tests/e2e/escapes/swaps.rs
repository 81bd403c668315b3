//! Races: a file swapped for a symlink to the canary, and back, while a read
//! pages through it or writes commit to it.

use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::{attempt, refused};
use crate::canary::Outside;
use crate::support::{CANARY, Fixture, payload};

/// Runs `swap` in a loop on another thread until `body` returns.
fn while_swapping(swap: impl Fn() + Send + 'static, body: impl FnOnce()) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let swapper = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            swap();
        }
    });
    body();
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("the swapper thread");
}

/// Turns `root/name` into a symlink to the canary and back into a regular file
/// holding `content`, each time by an atomic rename; the file then stays for
/// `hold` (zero: swap as fast as possible).
fn swapper(fx: &Fixture, name: &str, content: Vec<u8>, hold: Duration) -> impl Fn() + Send + 'static {
    let (root, canary) = (fx.root(), fx.outside());
    let name = name.to_string();
    move || {
        let (link, file) = (root.join(".swap-link"), root.join(".swap-file"));
        let _ = fs::remove_file(&link);
        symlink(&canary, &link).unwrap();
        fs::rename(&link, root.join(&name)).unwrap();
        fs::write(&file, &content).unwrap();
        fs::rename(&file, root.join(&name)).unwrap();
        std::thread::sleep(hold);
    }
}

fn a_symlink_swapped_during_a_paged_read_never_yields_the_canary() {
    let fx = Fixture::new();
    let real: Vec<u8> = (0..400).map(|i| format!("real line {i:04}\n")).collect::<String>().into_bytes();
    fx.write("swap.txt", &real);
    let outside = Outside::snapshot(&fx);
    // One parked stream at a time: a page of swap.txt after a page of
    // hello.txt reopens the file by its path, racing the swapper.
    let mut server = super::serve(&fx.root(), &["--max-sessions", "1"]);
    let (mut pages, mut refusals, mut id) = (0, 0, 0);
    // Flat out, then holding the real file a moment so that pages get through
    // and cursors are followed across swaps.
    for hold in [Duration::ZERO, Duration::from_millis(4)] {
        while_swapping(swapper(&fx, "swap.txt", real.clone(), hold), || {
            for round in 0..30 {
                let mut args = json!({"path": "swap.txt", "max_tokens": 200, "format": "json"});
                for _ in 0..8 {
                    let result = attempt(&mut server, &mut id, "a swapped symlink", "read", &args);
                    if result["isError"] == true {
                        let codes = ["permission_denied", "stale", "not_found"];
                        refused(&result, &codes, "a swapped symlink", "read", &args);
                        refusals += 1;
                        break;
                    }
                    let meta = &result["structuredContent"];
                    let (from, to) = (meta["start_byte"].as_u64().unwrap(), meta["end_byte"].as_u64().unwrap());
                    assert!(
                        payload(&result) == real[from as usize..to as usize],
                        "page {from}..{to} is not the file's"
                    );
                    pages += 1;
                    let Some(next) = meta["next_cursor"].as_str() else { break };
                    args = json!({"cursor": next, "max_tokens": 200});
                    if round % 2 == 1 {
                        let evict = json!({"path": "hello.txt", "max_tokens": 1});
                        attempt(&mut server, &mut id, "eviction", "read", &evict);
                    }
                }
                let stat = attempt(
                    &mut server,
                    &mut id,
                    "a swapped symlink",
                    "stat",
                    &json!({"format": "json", "path": "swap.txt"}),
                );
                if stat["isError"] == false {
                    assert_eq!(serde_json::from_slice::<Value>(&payload(&stat)).unwrap()["size"], real.len());
                }
            }
        });
    }
    assert!(pages + refusals >= 60, "{pages} pages, {refusals} refusals");
    outside.assert_unchanged();
}

fn a_symlink_swapped_during_writes_never_modifies_the_canary() {
    let fx = Fixture::new();
    let root = fx.root();
    fx.write("swap.txt", "real must-never content\n");
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&root, &[]);
    let (mut done, mut id) = (0, 0);
    for hold in [Duration::ZERO, Duration::from_millis(2)] {
        while_swapping(swapper(&fx, "swap.txt", b"real must-never content\n".to_vec(), hold), || {
            for i in 0..30 {
                let attempts = [
                    ("write", json!({"format": "json", "path": "swap.txt", "content": format!("written {i}\n")})),
                    ("write", json!({"format": "json", "path": "swap.txt", "content": "appended\n", "mode": "append"})),
                    (
                        "write",
                        json!({"format": "json", "path": "swap.txt", "content": "linked\n", "allow_hardlinks": true}),
                    ),
                    (
                        "edit",
                        json!({"format": "json", "path": "swap.txt", "old_string": "must-never", "new_string": "edited"}),
                    ),
                ];
                for (tool, args) in &attempts {
                    let result = attempt(&mut server, &mut id, "a swapped symlink", tool, args);
                    if result["isError"] == true {
                        let codes = ["invalid_argument", "permission_denied", "not_found", "io"];
                        refused(&result, &codes, "a swapped symlink", tool, args);
                    }
                    done += 1;
                }
            }
        });
    }
    assert_eq!(done, 240);
    outside.assert_unchanged();
    assert_eq!(fs::read_to_string(fx.outside()).unwrap(), CANARY);
    let left: Vec<_> = fs::read_dir(&root).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with(".cordon-")), "temporary files left: {left:?}");
}

mod tests {
    super::super::both! {
        a_symlink_swapped_during_a_paged_read_never_yields_the_canary => a_symlink_swapped_during_a_paged_read_never_yields_the_canary_as_a_confined_principal,
        a_symlink_swapped_during_writes_never_modifies_the_canary => a_symlink_swapped_during_writes_never_modifies_the_canary_as_a_confined_principal,
    }
}
