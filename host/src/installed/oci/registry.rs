//! A registry as the command line and the server use it: pull a component
//! (manifest, its one layer, the cosign signatures beside it), resolve a tag,
//! push a component and a signature. oci-client's async calls run on a small
//! runtime of this client's own, on a thread of their own, so callers may be
//! anywhere (a CLI command, the server's start, its reload watcher).
//!
//! Credentials come from `CORDON_REGISTRY_USERNAME`/`CORDON_REGISTRY_PASSWORD`,
//! else the docker config file (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`, its `auths.<registry>.auth`), else none; they are
//! never logged or written. A registry on a loopback address is spoken to
//! over plain HTTP, any other over HTTPS.

use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use serde_json::json;

use super::cosign::{self, Signature};
use super::{MANIFEST_TYPE, MAX_COMPONENT_BYTES, OciError, OciRef, WASM_CONFIG_TYPE, component_layer, sha256_digest};

/// The most bytes a signature's payload may have.
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// A client of the registry one reference names.
pub struct Registry {
    client: oci_client::Client,
    auth: RegistryAuth,
    runtime: tokio::runtime::Runtime,
}

/// A component pulled from a registry, with what links it to its digest.
pub struct Pulled {
    pub bytes: Vec<u8>,
    /// The manifest as served, and its digest (`sha256:…`), checked.
    pub manifest: String,
    pub manifest_digest: String,
    /// The cosign signatures stored for that digest.
    pub signatures: Vec<Signature>,
}

/// What `publish` pushed.
pub struct Published {
    pub manifest_digest: String,
    pub component_digest: String,
}

impl Registry {
    /// A client for `reference`'s registry, with its credentials.
    pub fn for_reference(reference: &OciRef) -> Registry {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let host = reference.registry();
        let loopback =
            ["127.0.0.1", "localhost", "[::1]"].iter().any(|l| host == *l || host.starts_with(&format!("{l}:")));
        let protocol = match loopback {
            true => ClientProtocol::HttpsExcept(vec![host.to_string()]),
            false => ClientProtocol::Https,
        };
        let config = ClientConfig {
            protocol,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        Registry { client: oci_client::Client::new(config), auth: credentials(host), runtime }
    }

    /// Runs `work` to its end on this client's runtime, on a thread of its own.
    fn block<T: Send>(&self, work: impl Future<Output = T> + Send) -> T {
        std::thread::scope(|scope| {
            scope.spawn(|| self.runtime.block_on(work)).join().expect("a registry request panicked")
        })
    }

    /// The digest the reference's tag (or digest) names now.
    pub fn resolve(&self, reference: &OciRef) -> Result<String, OciError> {
        let fetched = self.block(self.client.fetch_manifest_digest(&reference.inner, &self.auth));
        fetched.map_err(|e| failed(reference, "resolve its tag", e))
    }

    /// The component `reference` names, checked against every digest on the
    /// way, with the cosign signatures stored for it.
    pub fn pull(&self, reference: &OciRef) -> Result<Pulled, OciError> {
        let (manifest, manifest_digest) = self.manifest(reference)?;
        let not_component = |why: String| OciError::NotAComponent { reference: reference.to_string(), why };
        let layer = component_layer(&manifest).map_err(not_component)?;
        if layer.size > MAX_COMPONENT_BYTES {
            return Err(not_component(format!("its layer has {} bytes, over {MAX_COMPONENT_BYTES}", layer.size)));
        }
        let bytes = self.blob(reference, &layer.digest, layer.size)?;
        let manifest =
            String::from_utf8(manifest.to_vec()).map_err(|_| not_component("a manifest not UTF-8".into()))?;
        let signatures = self.signatures(reference, &manifest_digest)?;
        Ok(Pulled { bytes, manifest, manifest_digest, signatures })
    }

    /// A manifest by reference, its digest checked (against the reference's
    /// own, when it has one).
    fn manifest(&self, reference: &OciRef) -> Result<(bytes::Bytes, String), OciError> {
        let pulled = self.block(self.client.pull_manifest_raw(&reference.inner, &self.auth, &[MANIFEST_TYPE]));
        let (manifest, _) = pulled.map_err(|e| failed(reference, "pull its manifest", e))?;
        let digest = sha256_digest(&manifest);
        if let Some(expected) = reference.digest().filter(|d| *d != digest) {
            let (expected, found) = (expected.to_string(), digest);
            return Err(OciError::Digest { reference: reference.to_string(), expected, found });
        }
        Ok((manifest, digest))
    }

    /// A blob of `size` bytes by digest, checked.
    fn blob(&self, reference: &OciRef, digest: &str, size: u64) -> Result<Vec<u8>, OciError> {
        // Read as a stream, to stop at the size the manifest gave: a registry
        // that sends more is refused before it fills the memory.
        let pulled = self.block(async {
            use futures_util::TryStreamExt;
            let mut stream = self.client.pull_blob_stream(&reference.inner, digest).await?;
            let mut out = Vec::with_capacity(size as usize);
            while let Some(piece) = stream.try_next().await.map_err(OciDistributionError::IoError)? {
                if (out.len() + piece.len()) as u64 > size {
                    return Err(OciDistributionError::SpecViolationError(format!(
                        "a blob over its size of {size} bytes"
                    )));
                }
                out.extend_from_slice(&piece);
            }
            Ok(out)
        });
        let out = pulled.map_err(|e| failed(reference, "pull a blob", e))?;
        let found = sha256_digest(&out);
        if found != digest || out.len() as u64 != size {
            return Err(OciError::Digest { reference: reference.to_string(), expected: digest.to_string(), found });
        }
        Ok(out)
    }

    /// The cosign signatures for `digest` (none when there is no `.sig` tag).
    fn signatures(&self, reference: &OciRef, digest: &str) -> Result<Vec<Signature>, OciError> {
        let at = reference.with_tag(&cosign::signature_tag(digest));
        let manifest = match self.manifest(&at) {
            Ok((manifest, _)) => manifest,
            Err(OciError::Registry { reason, .. }) if reason == NOT_FOUND => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut found = Vec::new();
        for layer in
            cosign::layers(&manifest).map_err(|why| OciError::NotAComponent { reference: at.to_string(), why })?
        {
            if layer.size > MAX_PAYLOAD_BYTES {
                continue;
            }
            let payload = self.blob(&at, &layer.digest, layer.size)?;
            found.push(Signature { payload, signature: layer.signature, keyless: layer.keyless });
        }
        Ok(found)
    }

    /// Pushes `bytes` (a component; `imports` and `exports` its interfaces)
    /// as the CNCF Wasm OCI artifact to `reference`.
    pub fn publish(&self, reference: &OciRef, bytes: &[u8], interfaces: Interfaces) -> Result<Published, OciError> {
        let component_digest = sha256_digest(bytes);
        let config = serde_json::to_vec(&json!({
            "architecture": "wasm", "os": "wasip2", "layerDigests": [component_digest],
            "component": { "imports": interfaces.imports, "exports": interfaces.exports },
        }))
        .expect("JSON");
        let manifest = json!({
            "schemaVersion": 2, "mediaType": MANIFEST_TYPE, "artifactType": "application/wasm",
            "config": { "mediaType": WASM_CONFIG_TYPE, "digest": sha256_digest(&config), "size": config.len() },
            "layers": [{ "mediaType": "application/wasm", "digest": component_digest, "size": bytes.len() }],
        });
        self.push_blob(reference, bytes.to_vec())?;
        self.push_blob(reference, config)?;
        let manifest_digest = self.push_manifest(reference, serde_json::to_vec(&manifest).expect("JSON"))?;
        Ok(Published { manifest_digest, component_digest })
    }

    /// Adds a cosign signature (`signature` over `payload`, both made by
    /// [`cosign::sign`]) for `digest`, beside any already there.
    pub fn push_signature(&self, reference: &OciRef, digest: &str, signed: &cosign::Made) -> Result<(), OciError> {
        let at = reference.with_tag(&cosign::signature_tag(digest));
        let existing = match self.manifest(&at) {
            Ok((manifest, _)) => Some(manifest),
            Err(OciError::Registry { reason, .. }) if reason == NOT_FOUND => None,
            Err(e) => return Err(e),
        };
        self.push_blob(&at, signed.payload.clone())?;
        let (manifest, config) = cosign::manifest_with(existing.as_deref(), signed)
            .map_err(|why| OciError::NotAComponent { reference: at.to_string(), why })?;
        self.push_blob(&at, config)?;
        self.push_manifest(&at, manifest)?;
        Ok(())
    }

    fn push_blob(&self, reference: &OciRef, bytes: Vec<u8>) -> Result<(), OciError> {
        let digest = sha256_digest(&bytes);
        let pushed = self.block(async {
            self.client.store_auth_if_needed(reference.registry(), &self.auth).await;
            self.client.push_blob(&reference.inner, bytes, &digest).await
        });
        pushed.map(drop).map_err(|e| failed(reference, "push a blob", e))
    }

    fn push_manifest(&self, reference: &OciRef, manifest: Vec<u8>) -> Result<String, OciError> {
        let digest = sha256_digest(&manifest);
        let content_type = MANIFEST_TYPE.parse().expect("a header value");
        let pushed = self.block(async {
            self.client.store_auth_if_needed(reference.registry(), &self.auth).await;
            self.client.push_manifest_raw(&reference.inner, manifest, content_type).await
        });
        pushed.map_err(|e| failed(reference, "push its manifest", e))?;
        Ok(digest)
    }

    /// The same registry, repository and the `digest`, for a message.
    pub fn pinned(reference: &OciRef, digest: &str) -> String {
        reference.at_digest(digest).to_string()
    }
}

/// A component's interfaces, as `publish` writes them in its config.
pub struct Interfaces {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// What a missing manifest's error says, to tell it from other failures.
const NOT_FOUND: &str = "not found";

fn failed(reference: &OciRef, what: &'static str, e: OciDistributionError) -> OciError {
    let unknown = |codes: &[oci_client::errors::OciError]| {
        codes.iter().any(|c| matches!(c.code, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown))
    };
    let reason = match &e {
        OciDistributionError::ImageManifestNotFoundError(_) => NOT_FOUND.to_string(),
        OciDistributionError::ServerError { code: 404, .. } => NOT_FOUND.to_string(),
        OciDistributionError::RegistryError { envelope, .. } if unknown(&envelope.errors) => NOT_FOUND.to_string(),
        other => other.to_string(),
    };
    OciError::Registry { reference: reference.to_string(), what, reason }
}

/// The credentials for `registry`: the environment's, the docker config's, or none.
fn credentials(registry: &str) -> RegistryAuth {
    if let (Ok(user), Ok(password)) =
        (std::env::var("CORDON_REGISTRY_USERNAME"), std::env::var("CORDON_REGISTRY_PASSWORD"))
    {
        return RegistryAuth::Basic(user, password);
    }
    let path = match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => std::path::PathBuf::from(dir).join("config.json"),
        None => match std::env::var_os("HOME") {
            Some(home) => std::path::PathBuf::from(home).join(".docker/config.json"),
            None => return RegistryAuth::Anonymous,
        },
    };
    let text = crate::ambient::read_file(&path).ok().and_then(|b| String::from_utf8(b).ok());
    text.and_then(|text| docker_auth(&text, registry)).unwrap_or(RegistryAuth::Anonymous)
}

/// `auths.<registry>.auth` (base64 `user:password`) of a docker config file.
fn docker_auth(config: &str, registry: &str) -> Option<RegistryAuth> {
    let value: serde_json::Value = serde_json::from_str(config).ok()?;
    let auths = value["auths"].as_object()?;
    let entry = auths.get(registry).or_else(|| auths.get(&format!("https://{registry}")))?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(entry["auth"].as_str()?).ok()?;
    let (user, password) =
        String::from_utf8(decoded).ok()?.split_once(':').map(|(u, p)| (u.to_string(), p.to_string()))?;
    Some(RegistryAuth::Basic(user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_credentials_are_read_for_their_registry_only() {
        let auth = base64::engine::general_purpose::STANDARD.encode("robot:s3cret");
        let config = format!(r#"{{"auths": {{"registry.example:5000": {{"auth": "{auth}"}}}}}}"#);
        match docker_auth(&config, "registry.example:5000") {
            Some(RegistryAuth::Basic(user, password)) => {
                assert_eq!((user.as_str(), password.as_str()), ("robot", "s3cret"))
            }
            _ => panic!("no credentials read"),
        }
        assert!(docker_auth(&config, "other.example").is_none());
        assert!(docker_auth("not json", "registry.example:5000").is_none());
    }
}
