//! The hub and its listeners on a real directory, with inotify: what a
//! subscription sees, what it must not, and the bounds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::policy::{DirSpec, Mode, Policy};

/// A root with a deny rule (`*.pem`), and a scope over it.
fn root() -> (tempfile::TempDir, PathBuf, Scope) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let policy =
        Policy::new(&[DirSpec { path: root.clone(), mode: Mode::ReadWrite }], &["*.pem".into()], false).unwrap();
    let scope = Scope { roots: vec![root.clone()], judge: Arc::clone(policy.judge()) };
    (dir, root, scope)
}

fn uri(path: &Path) -> String {
    file_uri(path)
}

/// The notices that come within `wait`, gathered until a quiet spell.
fn gather(listener: &Listener, wait: Duration) -> Vec<Notice> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        let mut all = Vec::new();
        let mut wait = wait;
        while let Ok(more) = tokio::time::timeout(wait, listener.next()).await {
            all.extend(more);
            wait = WINDOW * 6;
        }
        all
    })
}

use crate::results::resources::file_uri;

#[test]
fn a_subscribed_file_is_told_of_a_write_a_rename_over_it_and_its_deletion() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    hub.register(&listener);
    hub.register(&listener);
    assert_eq!(hub.listeners(), 1, "registered once");
    let file = root.join("a.txt");
    std::fs::write(&file, "one").unwrap();
    assert_eq!(listener.subscribe(&hub, &uri(&file), &file), Ok(Subscribed::File));
    let updated = vec![Notice::Updated { uri: uri(&file), resync: false }];
    std::fs::write(&file, "two").unwrap();
    assert_eq!(gather(&listener, Duration::from_secs(5)), updated, "a write");
    std::fs::write(root.join("a.tmp"), "three").unwrap();
    std::fs::rename(root.join("a.tmp"), &file).unwrap();
    assert_eq!(gather(&listener, Duration::from_secs(5)), updated, "a rename over it");
    std::fs::remove_file(&file).unwrap();
    assert_eq!(gather(&listener, Duration::from_secs(5)), updated, "its deletion");
    std::fs::write(root.join("other.txt"), "x").unwrap();
    assert_eq!(gather(&listener, Duration::from_millis(500)), vec![], "another file in the directory");
    assert!(listener.unsubscribe(&uri(&file)) && !listener.unsubscribe(&uri(&file)));
    assert_eq!(hub.watches(), 0, "the directory's watch ended with its last subscription");
}

#[test]
fn a_directory_subscription_names_each_file_but_never_a_denied_one() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    hub.register(&listener);
    let sub = root.join("sub");
    assert_eq!(listener.subscribe(&hub, &uri(&sub), &sub), Ok(Subscribed::Directory));
    std::fs::create_dir(sub.join("deeper")).unwrap();
    std::thread::sleep(WINDOW * 4);
    let _ = listener.take();
    std::fs::write(sub.join("key.pem"), "secret").unwrap();
    std::fs::write(sub.join("deeper/key.pem"), "secret").unwrap();
    std::fs::write(sub.join("deeper/n.txt"), "x").unwrap();
    let got = gather(&listener, Duration::from_secs(5));
    let named: Vec<&str> = got
        .iter()
        .filter_map(|n| match n {
            Notice::Updated { uri, .. } => Some(uri.as_str()),
            Notice::ListChanged => None,
        })
        .collect();
    assert!(named.contains(&uri(&sub.join("deeper/n.txt")).as_str()), "{got:?}");
    assert!(named.iter().all(|u| !u.ends_with(".pem")), "no change of a denied file is told: {got:?}");
}

#[test]
fn subscriptions_outside_the_roots_or_denied_are_refused() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    let code = |path: &Path| listener.subscribe(&hub, &uri(path), path).unwrap_err().code();
    assert_eq!(code(Path::new("/etc/hostname")), "permission_denied");
    assert_eq!(code(&root.join("id.pem")), "permission_denied", "denied even before it exists");
    std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
    assert_eq!(code(&root.join("etc/hostname")), "permission_denied", "a link out of the root");
    assert_eq!(code(&root.join("no/such/file")), "not_found");
    assert_eq!(hub.watches(), 0);
}

#[test]
fn what_waits_is_merged_and_bounded_and_an_overflow_resyncs() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    let sub = root.join("sub");
    listener.subscribe(&hub, &uri(&sub), &sub).unwrap();
    let resynced = vec![Notice::Updated { uri: uri(&sub), resync: true }];
    let batch_of = |from: usize, n: usize| {
        let mut batch = Batch::default();
        for i in from..from + n {
            batch.paths.insert(sub.join(format!("f{i}")), false);
        }
        batch
    };
    // More files than a batch names under one directory: the directory, once.
    listener.offer(&batch_of(0, listener::MAX_NAMED + 1));
    assert_eq!(listener.take(), resynced);
    // A listener that does not read: what waits stops at the bound.
    let per_batch = listener::MAX_NAMED;
    let batches = listener::MAX_PENDING / per_batch + 1;
    for b in 0..batches {
        listener.offer(&batch_of(b * per_batch, per_batch));
        listener.offer(&batch_of(b * per_batch, per_batch));
    }
    let got = listener.take();
    assert_eq!(got.len(), listener::MAX_PENDING + 1, "the bound, and one resync notice");
    assert_eq!(got[0], resynced[0]);
    assert!(listener.take().is_empty());
    let overflowed = Batch { overflowed: true, ..Batch::default() };
    listener.offer(&overflowed);
    assert_eq!(listener.take(), resynced);
}

#[test]
fn a_batch_merges_paths_and_overflows_past_its_bound() {
    let mut batch = Batch::default();
    let event = |kind, path: PathBuf| Ok(notify::Event::new(kind).add_path(path));
    let modify = EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Content));
    batch.add(event(modify, "/r/a".into()));
    batch.add(event(EventKind::Create(notify::event::CreateKind::File), "/r/a".into()));
    batch.add(event(EventKind::Access(AccessKind::Open(AccessMode::Read)), "/r/b".into()));
    assert_eq!(batch.paths().collect::<Vec<_>>(), vec![(Path::new("/r/a"), true)]);
    for i in 0..MAX_BATCH {
        batch.add(event(modify, format!("/r/{i}").into()));
    }
    assert!(batch.overflowed() && batch.paths.len() == MAX_BATCH);
}

#[test]
fn watches_of_the_same_or_nested_directories_never_end_each_other() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    hub.register(&listener);
    let (file, deep) = (root.join("a.txt"), root.join("sub/b.txt"));
    std::fs::write(&file, "one").unwrap();
    std::fs::write(&deep, "one").unwrap();
    // A file in the root (the root watched flat), the root recursively, a file deeper (sub flat).
    listener.subscribe(&hub, &uri(&file), &file).unwrap();
    listener.subscribe(&hub, &uri(&root), &root).unwrap();
    listener.subscribe(&hub, &uri(&deep), &deep).unwrap();
    assert_eq!(hub.watches(), 3);
    // Ending the flat watches leaves the recursive one whole, and the other way round.
    assert!(listener.unsubscribe(&uri(&file)) && listener.unsubscribe(&uri(&deep)));
    std::fs::write(&file, "two").unwrap();
    std::fs::write(&deep, "two").unwrap();
    let got = gather(&listener, Duration::from_secs(5));
    for path in [&file, &deep] {
        assert!(got.contains(&Notice::Updated { uri: uri(path), resync: false }), "{path:?}: {got:?}");
    }
    listener.subscribe(&hub, &uri(&deep), &deep).unwrap();
    assert!(listener.unsubscribe(&uri(&root)));
    std::fs::write(&deep, "three").unwrap();
    assert_eq!(gather(&listener, Duration::from_secs(5)), vec![Notice::Updated { uri: uri(&deep), resync: false }]);
    assert!(listener.unsubscribe(&uri(&deep)));
    assert_eq!(hub.watches(), 0);
}

#[test]
fn a_listener_holds_at_most_its_bound_of_subscriptions() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    for i in 0..listener::MAX_SUBSCRIPTIONS {
        let file = root.join(format!("f{i}"));
        listener.subscribe(&hub, &uri(&file), &file).unwrap();
    }
    let one_more = root.join("one-more");
    let refused = listener.subscribe(&hub, &uri(&one_more), &one_more).unwrap_err();
    assert_eq!((refused.code(), refused), ("too_large", SubscribeError::TooMany));
    assert_eq!(hub.watches(), 1, "one directory holds them all");
}

#[test]
fn events_dropped_for_a_full_queue_make_the_next_batch_a_resync() {
    let (_dir, root, scope) = root();
    let hub = Hub::new();
    let listener = Listener::new(scope);
    hub.register(&listener);
    let file = root.join("a.txt");
    listener.subscribe(&hub, &uri(&file), &file).unwrap();
    let _ = listener.take();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let dropped = std::sync::atomic::AtomicBool::new(true);
    let unrelated = notify::Event::new(EventKind::Create(notify::event::CreateKind::File));
    tx.send(Ok(unrelated.add_path(root.join("other.txt")))).unwrap();
    drop(tx);
    batches(&rx, &dropped, &Arc::downgrade(&hub.shared));
    assert_eq!(listener.take(), vec![Notice::Updated { uri: uri(&file), resync: true }]);
}
