//! Tools from OCI registries: `cordon tool add oci://REGISTRY/REPO:TAG` (or
//! `@sha256:…`) pulls a component published as the CNCF Wasm OCI artifact
//! (one `application/wasm` layer, as `wkg` and Wassette publish it), and
//! `cordon tool publish` pushes one. The lockfile pins the manifest's digest
//! and keeps the manifest itself ([`OciPin`]), so every load checks offline
//! that the component is the one the manifest names, and, when the registry
//! answers, that the tag still points at it. Signatures are cosign's
//! ([`cosign`]): a `sha256-<digest>.sig` manifest in the same repository.

pub mod cosign;
mod registry;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use registry::{Interfaces, Published, Pulled, Registry};

/// The layer media types a component may come in: the CNCF Wasm OCI
/// artifact's, and the older `wasm-to-oci` one.
pub const WASM_LAYER_TYPES: [&str; 2] = ["application/wasm", "application/vnd.wasm.content.layer.v1+wasm"];
/// The config media type `publish` writes (the CNCF Wasm OCI artifact's).
pub const WASM_CONFIG_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The manifest media type (OCI image manifest).
pub const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The largest component pulled, in bytes.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// A component's place in a registry: `oci://REGISTRY/REPOSITORY` and a tag,
/// a digest, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    inner: oci_client::Reference,
}

impl OciRef {
    /// Reads `oci://REGISTRY/REPO[:TAG][@sha256:HEX]`; the registry must be
    /// named (no implicit Docker Hub), and a tag or a digest given.
    pub fn parse(text: &str) -> Result<OciRef, OciError> {
        let bad = |why: &str| OciError::Reference { text: text.to_string(), why: why.to_string() };
        let rest = text.strip_prefix("oci://").ok_or_else(|| bad("it does not start with oci://"))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| bad("it names no repository"))?;
        if !(registry.contains('.') || registry.contains(':') || registry == "localhost") {
            return Err(bad("the first part must be a registry (a host, with a port or a dot)"));
        }
        if !path.contains(':') && !path.contains('@') {
            return Err(bad("give a tag (:TAG) or a digest (@sha256:…)"));
        }
        let inner: oci_client::Reference = rest.parse().map_err(|e: oci_client::ParseError| bad(&e.to_string()))?;
        Ok(OciRef { inner })
    }

    pub fn registry(&self) -> &str {
        self.inner.resolve_registry()
    }

    /// `REGISTRY/REPOSITORY`, as cosign's payload names the image.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.inner.registry(), self.inner.repository())
    }

    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The same repository at `tag`.
    fn with_tag(&self, tag: &str) -> OciRef {
        let inner = oci_client::Reference::with_tag(
            self.inner.registry().to_string(),
            self.inner.repository().to_string(),
            tag.to_string(),
        );
        OciRef { inner }
    }

    /// The same repository at `digest`.
    fn at_digest(&self, digest: &str) -> OciRef {
        let inner = oci_client::Reference::with_digest(
            self.inner.registry().to_string(),
            self.inner.repository().to_string(),
            digest.to_string(),
        );
        OciRef { inner }
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}", self.inner.whole())
    }
}

/// What the lockfile keeps of a tool added from a registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciPin {
    /// Where it was added from: `oci://REGISTRY/REPO:TAG` (or `@sha256:…`).
    pub reference: String,
    /// The digest of the manifest it was pulled by (`sha256:…`).
    pub manifest_digest: String,
    /// The manifest, as the registry served it: the link from the pinned
    /// digest to the component's.
    pub manifest: String,
    /// Its cosign signature, when one verified at `add`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<cosign::CosignSigned>,
}

impl OciPin {
    /// Checks, without the network, that the pin holds together: the
    /// manifest has the pinned digest, and its one component layer is the
    /// component with SHA-256 `component` (hex).
    pub fn check(&self, component: &str) -> Result<(), OciError> {
        let found = sha256_digest(self.manifest.as_bytes());
        if found != self.manifest_digest {
            return Err(OciError::Pin {
                reference: self.reference.clone(),
                why: format!("its manifest has digest {found}, not the pinned {}", self.manifest_digest),
            });
        }
        let layer = component_layer(self.manifest.as_bytes())
            .map_err(|why| OciError::Pin { reference: self.reference.clone(), why })?;
        if layer.digest != format!("sha256:{component}") {
            return Err(OciError::Pin {
                reference: self.reference.clone(),
                why: format!("its manifest names the component {}, not sha256:{component}", layer.digest),
            });
        }
        Ok(())
    }
}

/// Checks an installed tool from a registry when it is loaded: its pin holds
/// together (offline, see [`OciPin::check`]), and, when the registry answers,
/// its tag still names the pinned manifest. An unreachable registry is a
/// warning: the pinned, checked bytes are loaded.
pub fn recheck(pin: &OciPin, component: &str) -> Result<(), OciError> {
    pin.check(component)?;
    let reference = OciRef::parse(&pin.reference)?;
    if reference.tag().is_none() {
        return Ok(());
    }
    match Registry::for_reference(&reference).resolve(&reference) {
        Ok(now) if now == pin.manifest_digest => Ok(()),
        Ok(now) => {
            Err(OciError::TagMoved { reference: pin.reference.clone(), pinned: pin.manifest_digest.clone(), now })
        }
        Err(e) => {
            tracing::warn!("{e}; loading the pinned component ({})", pin.manifest_digest);
            Ok(())
        }
    }
}

/// The component layer of a manifest: its digest and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub digest: String,
    pub size: u64,
}

/// The one component layer `manifest` (JSON) lists; why not, if it does not.
pub fn component_layer(manifest: &[u8]) -> Result<Layer, String> {
    let value: Value = serde_json::from_slice(manifest).map_err(|e| format!("the manifest is not JSON: {e}"))?;
    let layers = value["layers"].as_array().ok_or("the manifest lists no layers")?;
    let wasm: Vec<&Value> =
        layers.iter().filter(|l| l["mediaType"].as_str().is_some_and(|t| WASM_LAYER_TYPES.contains(&t))).collect();
    let [layer] = wasm[..] else {
        return Err(format!(
            "the manifest has {} layers of a component's media types ({}); a tool has exactly one",
            wasm.len(),
            WASM_LAYER_TYPES.join(", ")
        ));
    };
    let digest =
        layer["digest"].as_str().filter(|d| d.starts_with("sha256:")).ok_or("a layer without a sha256 digest")?;
    let size = layer["size"].as_u64().ok_or("a layer without a size")?;
    Ok(Layer { digest: digest.to_string(), size })
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", super::sha256_hex(bytes))
}

/// Why a registry, a reference or a pin cannot be used.
#[derive(Debug)]
pub enum OciError {
    /// The text is not an `oci://` reference this host reads.
    Reference { text: String, why: String },
    /// The registry did not answer as asked (its words, or the transport's).
    Registry { reference: String, what: &'static str, reason: String },
    /// What the reference names is not a tool component.
    NotAComponent { reference: String, why: String },
    /// The registry served bytes that do not have the digest they were asked by.
    Digest { reference: String, expected: String, found: String },
    /// The tag now names another manifest than the one pinned.
    TagMoved { reference: String, pinned: String, now: String },
    /// The lockfile's pin does not hold together.
    Pin { reference: String, why: String },
    /// A signing key cannot be used.
    Key { path: String, why: String },
}

impl fmt::Display for OciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OciError::Reference { text, why } => write!(
                f,
                "`{text}` is not a registry reference ({why}): write oci://REGISTRY/REPOSITORY:TAG or \
                 oci://REGISTRY/REPOSITORY@sha256:DIGEST"
            ),
            OciError::Registry { reference, what, reason } => write!(f, "{reference}: cannot {what}: {reason}"),
            OciError::NotAComponent { reference, why } => write!(f, "{reference} is not a tool component: {why}"),
            OciError::Digest { reference, expected, found } => {
                write!(f, "{reference}: the registry served bytes with digest {found} for {expected}; they are refused")
            }
            OciError::TagMoved { reference, pinned, now } => write!(
                f,
                "{reference} now names the manifest {now}, not the pinned {pinned}: the tag was moved to other bytes. \
                 Run `cordon tool add {reference}` again to take them, or pin a digest (oci://…@{pinned})"
            ),
            OciError::Pin { reference, why } => {
                write!(f, "the lockfile's pin of {reference} does not hold: {why}; add the tool again")
            }
            OciError::Key { path, why } => write!(f, "the signing key {path} cannot be used: {why}"),
        }
    }
}

impl std::error::Error for OciError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_a_registry_a_repository_and_a_tag_or_digest() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/hello:1.0").unwrap();
        assert_eq!(
            (r.registry(), r.repository().as_str(), r.tag()),
            ("127.0.0.1:5000", "127.0.0.1:5000/tools/hello", Some("1.0"))
        );
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/tools/hello:1.0");
        let d = format!("sha256:{}", "ab".repeat(32));
        let r = OciRef::parse(&format!("oci://ghcr.io/org/tool@{d}")).unwrap();
        assert_eq!(r.digest(), Some(d.as_str()));
        for bad in [
            "127.0.0.1:5000/x:1",
            "oci://tools/hello:1",
            "oci://ghcr.io/org/tool",
            "oci://ghcr.io",
            "oci://ghcr.io/Bad Name:1",
        ] {
            let e = OciRef::parse(bad).unwrap_err().to_string();
            assert!(e.contains("oci://REGISTRY/REPOSITORY:TAG"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_pin_holds_only_when_manifest_digest_and_layer_agree() {
        let component = "cd".repeat(32);
        let manifest = format!(
            r#"{{"schemaVersion":2,"layers":[{{"mediaType":"application/wasm","digest":"sha256:{component}","size":3}}]}}"#
        );
        let pin = OciPin {
            reference: "oci://r.example/t:1".into(),
            manifest_digest: sha256_digest(manifest.as_bytes()),
            manifest: manifest.clone(),
            signature: None,
        };
        pin.check(&component).unwrap();
        assert!(pin.check(&"ef".repeat(32)).unwrap_err().to_string().contains("names the component"));
        let moved = OciPin { manifest_digest: format!("sha256:{}", "00".repeat(32)), ..pin.clone() };
        assert!(moved.check(&component).unwrap_err().to_string().contains("not the pinned"));
        let two = manifest.replace("]}", r#",{"mediaType":"application/wasm","digest":"sha256:00","size":1}]}"#);
        assert!(component_layer(two.as_bytes()).unwrap_err().contains("exactly one"));
    }
}
