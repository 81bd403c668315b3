//! The cursor key on disk: `<state-dir>/cursor.key`, owner-only, made once
//! and shared by every server on the state directory. Apart from the cursor
//! codec (`cursor`), which has no file access (the fuzz targets compile it on
//! its own).

use super::cursor::CursorKey;

impl CursorKey {
    /// The key in `dir/cursor.key`, created (random, owner-only) if missing, so
    /// cursors survive restarts. A new key is written whole to a file of its
    /// own, then linked into place: servers starting at once on a new state
    /// directory agree on one key, and none reads a half-written one.
    pub fn load_or_create(dir: &cap_std::fs::Dir) -> std::io::Result<CursorKey> {
        use std::io::{Read, Write};
        const NAME: &str = "cursor.key";
        let invalid =
            |e: super::cursor::KeyError| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{NAME}: {e}"));
        let read = || {
            let mut text = String::new();
            dir.open(NAME)?.read_to_string(&mut text)?;
            CursorKey::from_hex(&text).map_err(invalid)
        };
        match read() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            loaded => return loaded,
        }
        let key = CursorKey::random();
        let draft = format!(".{NAME}.{:016x}.tmp", getrandom::u64().expect("the OS random source works"));
        let mut file = dir.open_with(&draft, crate::private::file_options().write(true).create_new(true))?;
        let written = file.write_all(key.to_hex().as_bytes()).and_then(|()| file.sync_all());
        let linked = written.and_then(|()| dir.hard_link(&draft, dir, NAME));
        let _ = dir.remove_file(&draft);
        match linked {
            Ok(()) => Ok(key),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(),
            Err(e) => Err(e),
        }
    }
}
