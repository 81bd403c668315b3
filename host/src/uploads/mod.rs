//! Staged uploads: content too large for one message arrives in chunks, is
//! checked (size and SHA-256) and only then handed, read-only, to the tool that
//! commits it (`write` with `upload_id`). Everything lives in the state
//! directory (`uploads/<id>/data`) behind a capability handle; an upload left
//! idle past its time to live is deleted, by the server that holds it or, after
//! a restart, by the next server to start on that state directory. A server
//! without a state directory keeps them in a directory of its own (`scratch`),
//! removed when it stops.

mod scratch;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::sha256::{self, Sha256};
use crate::tool::{ErrorCode, ToolError};

/// The limits on uploads.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    /// The most bytes one upload may hold.
    pub max_bytes: u64,
    /// The most decoded bytes in one chunk.
    pub max_chunk: usize,
    /// Uploads open at once.
    pub max_open: usize,
    /// How long an idle upload is kept.
    pub ttl: Duration,
}

struct Upload {
    next_index: u64,
    bytes: u64,
    hasher: Sha256,
    file: cap_std::fs::File,
    last_used: Instant,
}

/// The uploads in progress.
pub struct Uploads {
    /// The host path of the uploads directory (for preopening one upload).
    path: PathBuf,
    dir: Dir,
    limits: UploadLimits,
    open: Mutex<HashMap<String, Option<Upload>>>,
    /// The server's own directory, when it has no state directory.
    scratch: Option<scratch::Scratch>,
}

/// The guest path where a committed upload's directory is mounted.
pub const STAGED_GUEST_DIR: &str = "/.cordon-upload";

impl Uploads {
    /// Uses `dir` (at host path `path`) for uploads, deleting the ones that were
    /// left there idle past their time to live. Younger ones may belong to
    /// another server sharing the state directory, and are kept.
    pub fn new(path: PathBuf, dir: Dir, limits: UploadLimits) -> std::io::Result<Uploads> {
        for entry in dir.entries()? {
            let name = entry?.file_name();
            let Some(name) = name.to_str().map(str::to_owned) else { continue };
            let idle = dir
                .metadata(format!("{name}/data"))
                .or_else(|_| dir.metadata(&name))
                .and_then(|m| m.modified())
                .map(|t| t.into_std().elapsed().unwrap_or_default());
            if idle.is_ok_and(|idle| idle > limits.ttl) {
                tracing::info!(upload = %name, "removing an abandoned upload");
                if let Err(e) = dir.remove_dir_all(&name) {
                    tracing::warn!(upload = %name, "could not remove an abandoned upload: {e}");
                }
            }
        }
        Ok(Uploads { path, dir, limits, open: Mutex::new(HashMap::new()), scratch: None })
    }

    /// Uses a new directory of this server's own in `temp` (the system's
    /// temporary directory), removed by `close` or when this drops; first
    /// removes those left there by servers that are gone.
    pub fn private(temp: &Path, limits: UploadLimits) -> std::io::Result<Uploads> {
        scratch::sweep_logged(temp, limits.ttl);
        let (scratch, dir) = scratch::Scratch::create(temp)?;
        let path = scratch.path().to_path_buf();
        Ok(Uploads { path, dir, limits, open: Mutex::new(HashMap::new()), scratch: Some(scratch) })
    }

    /// Removes the server's own directory, if it has one, with every upload
    /// still in it: the server is stopping. Uploads in a state directory are
    /// kept for a restart.
    pub fn close(&self) {
        if let Some(scratch) = &self.scratch {
            scratch.remove();
        }
    }

    pub fn limits(&self) -> &UploadLimits {
        &self.limits
    }

    /// Starts an upload.
    pub fn start(&self) -> Result<Value, ToolError> {
        self.sweep();
        let mut open = self.open.lock().expect("uploads lock");
        if open.len() >= self.limits.max_open {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("{} uploads are open, the most this server allows; commit or abort one", open.len()),
            ));
        }
        let id = format!("{:016x}", getrandom::u64().expect("the OS random source works"));
        let created = crate::private::create_dir(&self.dir, &id)
            .and_then(|upload| upload.open_with("data", crate::private::file_options().write(true).create_new(true)));
        let file = created.map_err(|e| io_error("create the upload", &e))?;
        open.insert(
            id.clone(),
            Some(Upload { next_index: 0, bytes: 0, hasher: Sha256::new(), file, last_used: Instant::now() }),
        );
        Ok(json!({
            "upload_id": id,
            "max_chunk_bytes": self.limits.max_chunk,
            "max_bytes": self.limits.max_bytes,
            "expires_after_idle_secs": self.limits.ttl.as_secs(),
        }))
    }

    /// Appends chunk `index` (which must be the next one) to upload `id`.
    pub fn chunk(&self, id: &str, index: u64, data: &[u8]) -> Result<Value, ToolError> {
        if data.len() > self.limits.max_chunk {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("a chunk holds at most {} bytes; this one has {}", self.limits.max_chunk, data.len()),
            ));
        }
        let mut upload = self.take(id)?;
        let result = (|| {
            if index != upload.next_index {
                return Err(ToolError::new(
                    ErrorCode::InvalidArgument,
                    format!("upload `{id}` expects chunk {} next, not {index}", upload.next_index),
                ));
            }
            if upload.bytes + data.len() as u64 > self.limits.max_bytes {
                return Err(ToolError::new(
                    ErrorCode::TooLarge,
                    format!("an upload holds at most {} bytes", self.limits.max_bytes),
                ));
            }
            upload.file.write_all(data).map_err(|e| io_error("store the chunk", &e))?;
            upload.hasher.update(data);
            upload.bytes += data.len() as u64;
            upload.next_index += 1;
            Ok(json!({
                "upload_id": id,
                "index": index,
                "bytes": upload.bytes,
                "sha256": sha256::hex(&upload.hasher.clone().finalize()),
            }))
        })();
        self.put_back(id, upload);
        result
    }

    /// Deletes upload `id`.
    pub fn abort(&self, id: &str) -> Result<Value, ToolError> {
        let removed = self.open.lock().expect("uploads lock").remove(id);
        match removed {
            None => Err(unknown(id)),
            Some(_) => {
                self.remove_files(id);
                Ok(json!({ "upload_id": id, "aborted": true }))
            }
        }
    }

    /// Checks that upload `id` holds exactly `size` bytes with this SHA-256 and
    /// syncs it; returns the host directory to mount read-only for the tool.
    pub fn verified(&self, id: &str, size: u64, sha256: &str) -> Result<PathBuf, ToolError> {
        let upload = self.take(id)?;
        let actual = sha256::hex(&upload.hasher.clone().finalize());
        let result = if upload.bytes != size {
            Err(ToolError::new(ErrorCode::Conflict, format!("upload `{id}` holds {} bytes, not {size}", upload.bytes)))
        } else if !actual.eq_ignore_ascii_case(sha256) {
            Err(ToolError::new(ErrorCode::Conflict, format!("upload `{id}` has sha256 {actual}, not {sha256}")))
        } else {
            upload.file.sync_all().map_err(|e| io_error("sync the upload", &e)).map(|()| self.path.join(id))
        };
        self.put_back(id, upload);
        result
    }

    /// Deletes upload `id` after the tool committed it.
    pub fn finish(&self, id: &str) {
        self.open.lock().expect("uploads lock").remove(id);
        self.remove_files(id);
    }

    /// Deletes uploads idle past their time to live.
    pub fn sweep(&self) {
        let expired: Vec<String> = {
            let mut open = self.open.lock().expect("uploads lock");
            let ttl = self.limits.ttl;
            let ids: Vec<String> = open
                .iter()
                .filter(|(_, u)| u.as_ref().is_some_and(|u| u.last_used.elapsed() > ttl))
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                open.remove(id);
            }
            ids
        };
        for id in expired {
            tracing::info!(upload = %id, "upload expired");
            self.remove_files(&id);
        }
    }

    /// Takes an upload out of the table while a chunk or check uses it.
    fn take(&self, id: &str) -> Result<Upload, ToolError> {
        self.sweep();
        let mut open = self.open.lock().expect("uploads lock");
        match open.get_mut(id) {
            None => Err(unknown(id)),
            Some(slot) => slot.take().ok_or_else(|| {
                ToolError::new(ErrorCode::Conflict, format!("upload `{id}` is busy with another request; retry"))
            }),
        }
    }

    fn put_back(&self, id: &str, mut upload: Upload) {
        upload.last_used = Instant::now();
        if let Some(slot) = self.open.lock().expect("uploads lock").get_mut(id) {
            *slot = Some(upload);
        }
    }

    fn remove_files(&self, id: &str) {
        if let Err(e) = self.dir.remove_dir_all(id) {
            tracing::warn!(upload = %id, "could not remove the upload's files: {e}");
        }
    }
}

fn unknown(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::NotFound,
        format!("no upload `{id}`: it was never started, was committed or aborted, or expired"),
    )
}

fn io_error(what: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(ErrorCode::Io, format!("could not {what}: {err}"))
}
