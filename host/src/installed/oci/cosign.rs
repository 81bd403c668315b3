//! cosign's signatures of OCI artifacts, made and checked as `cosign sign
//! --key` and `cosign verify --key` do: the signature of the manifest
//! `sha256:HEX` is stored at the tag `sha256-HEX.sig` of the same repository,
//! an image manifest whose layers are "simple signing" payloads
//! (`{"critical": {"identity": {"docker-reference"}, "image":
//! {"docker-manifest-digest"}, "type": "cosign container image signature"}}`),
//! each with its ECDSA P-256 signature (base64 DER over the payload's
//! SHA-256) in the annotation `dev.cosignproject.cosign/signature`.
//!
//! Keyless signatures (a Fulcio certificate, a Rekor entry) are not checked:
//! without a pinned signer identity and issuer they would admit anyone, so a
//! component signed only that way is treated as unsigned, and refused when
//! signatures are required.

use base64::Engine as _;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{DerSignature, SigningKey};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::sha256_digest;
use crate::installed::signature::{SignatureError, Signed, TrustedKeys};

/// The media type of a simple-signing payload layer.
const PAYLOAD_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The annotation of a keyless signature's certificate.
const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The `type` a payload must state.
const PAYLOAD_KIND: &str = "cosign container image signature";

/// A signature as the lockfile keeps it: the key that verified it, the
/// payload it signs (base64) and the signature (base64 DER).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosignSigned {
    pub key_id: String,
    pub payload: String,
    pub signature: String,
}

/// A signature found in a registry.
pub struct Signature {
    pub payload: Vec<u8>,
    pub signature: String,
    /// It carries a certificate (keyless signing).
    pub keyless: bool,
}

/// A signature layer of a `.sig` manifest.
pub struct SigLayer {
    pub digest: String,
    pub size: u64,
    pub signature: String,
    pub keyless: bool,
}

/// A signature made by [`sign`], to push.
pub struct Made {
    pub payload: Vec<u8>,
    pub signature: String,
}

/// The tag cosign stores the signatures of `digest` (`sha256:HEX`) at.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The payload layers of a `.sig` manifest.
pub fn layers(manifest: &[u8]) -> Result<Vec<SigLayer>, String> {
    let value: Value = serde_json::from_slice(manifest).map_err(|e| format!("a signature manifest not JSON: {e}"))?;
    let layers = value["layers"].as_array().cloned().unwrap_or_default();
    Ok(layers
        .iter()
        .filter(|l| l["mediaType"] == PAYLOAD_TYPE)
        .filter_map(|l| {
            Some(SigLayer {
                digest: l["digest"].as_str()?.to_string(),
                size: l["size"].as_u64()?,
                signature: l["annotations"][SIGNATURE_ANNOTATION].as_str()?.to_string(),
                keyless: l["annotations"].get(CERTIFICATE_ANNOTATION).is_some(),
            })
        })
        .collect())
}

/// The payload signing `digest` of the image `repository` (`REGISTRY/REPO`).
fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let value = json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_KIND,
        },
        "optional": null,
    });
    serde_json::to_vec(&value).expect("JSON")
}

/// The digest a payload signs, if it is a cosign payload.
fn signed_digest(payload: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let critical = &value["critical"];
    (critical["type"] == PAYLOAD_KIND)
        .then(|| critical["image"]["docker-manifest-digest"].as_str().map(str::to_string))?
}

/// Signs `digest` of `repository` with the P-256 private key in `pem` (SEC1
/// `EC PRIVATE KEY`, as `openssl ecparam -genkey` writes, or PKCS#8).
pub fn sign(pem: &str, repository: &str, digest: &str) -> Result<Made, String> {
    let secret = p256::SecretKey::from_sec1_pem(pem)
        .or_else(|_| {
            use p256::pkcs8::DecodePrivateKey;
            p256::SecretKey::from_pkcs8_pem(pem)
        })
        .map_err(|_| {
            "not a PEM P-256 private key (SEC1 or PKCS#8; cosign's encrypted keys are not read)".to_string()
        })?;
    let payload = payload(repository, digest);
    let signature: DerSignature = SigningKey::from(secret).sign(&payload);
    Ok(Made { payload, signature: base64::engine::general_purpose::STANDARD.encode(signature.as_bytes()) })
}

/// The `.sig` manifest with `made` added to `existing`'s layers, and its config.
pub fn manifest_with(existing: Option<&[u8]>, made: &Made) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut layers = match existing {
        Some(bytes) => {
            let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
            value["layers"].as_array().cloned().unwrap_or_default()
        }
        None => Vec::new(),
    };
    layers.push(json!({
        "mediaType": PAYLOAD_TYPE, "digest": sha256_digest(&made.payload), "size": made.payload.len(),
        "annotations": { SIGNATURE_ANNOTATION: made.signature },
    }));
    let diff_ids: Vec<&Value> = layers.iter().map(|l| &l["digest"]).collect();
    let config = serde_json::to_vec(&json!({
        "architecture": "", "os": "", "config": {}, "created": "0001-01-01T00:00:00Z",
        "rootfs": { "type": "layers", "diff_ids": diff_ids },
    }))
    .expect("JSON");
    let manifest = json!({
        "schemaVersion": 2, "mediaType": super::MANIFEST_TYPE,
        "config": { "mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256_digest(&config), "size": config.len() },
        "layers": layers,
    });
    Ok((serde_json::to_vec(&manifest).expect("JSON"), config))
}

/// The first of `found` that signs `digest` with a trusted key, kept for the
/// lockfile; else why none does.
pub fn choose(found: &[Signature], digest: &str, keys: &TrustedKeys) -> Result<CosignSigned, SignatureError> {
    let mut why = SignatureError::Missing;
    for signature in found {
        if signature.keyless {
            why = SignatureError::Keyless;
            continue;
        }
        match signed_digest(&signature.payload) {
            Some(signed) if signed == digest => {}
            Some(signed) => {
                why = SignatureError::OtherBytes { signed };
                continue;
            }
            None => {
                why = SignatureError::Malformed { reason: "its payload is not a cosign signature payload".into() };
                continue;
            }
        }
        match keys.verify(&signature.payload, signature.signature.as_bytes()) {
            Ok(Signed { key_id, signature: der }) => {
                let payload = base64::engine::general_purpose::STANDARD.encode(&signature.payload);
                return Ok(CosignSigned { key_id, payload, signature: der });
            }
            Err(e) => why = e,
        }
    }
    Err(why)
}

/// Checks a pinned signature again: it signs `digest`, and its key is still
/// trusted and verifies it.
pub fn check(signed: &CosignSigned, digest: &str, keys: &TrustedKeys) -> Result<(), SignatureError> {
    let payload = base64::engine::general_purpose::STANDARD
        .decode(&signed.payload)
        .map_err(|e| SignatureError::Malformed { reason: format!("its payload is not base64: {e}") })?;
    match signed_digest(&payload) {
        Some(found) if found == digest => {}
        Some(found) => return Err(SignatureError::OtherBytes { signed: found }),
        None => return Err(SignatureError::Malformed { reason: "not a cosign signature payload".into() }),
    }
    keys.check(&payload, &Signed { key_id: signed.key_id.clone(), signature: signed.signature.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_tags_and_payloads_are_cosigns() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(signature_tag(&digest), format!("sha256-{}.sig", "ab".repeat(32)));
        let p = payload("127.0.0.1:5000/tools/hello", &digest);
        assert_eq!(signed_digest(&p), Some(digest.clone()));
        let text = String::from_utf8(p).unwrap();
        assert!(text.contains(r#""docker-reference":"127.0.0.1:5000/tools/hello""#), "{text}");
        assert_eq!(signed_digest(br#"{"critical":{"type":"other"}}"#), None);
    }

    #[test]
    fn keyless_and_misdirected_signatures_are_not_chosen() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let keys = TrustedKeys::default();
        let keyless = Signature { payload: payload("r.example/t", &digest), signature: "c2ln".into(), keyless: true };
        assert_eq!(choose(&[keyless], &digest, &keys).unwrap_err(), SignatureError::Keyless);
        let other = format!("sha256:{}", "cd".repeat(32));
        let copied = Signature { payload: payload("r.example/t", &other), signature: "c2ln".into(), keyless: false };
        assert_eq!(choose(&[copied], &digest, &keys).unwrap_err(), SignatureError::OtherBytes { signed: other });
        assert_eq!(choose(&[], &digest, &keys).unwrap_err(), SignatureError::Missing);
    }

    #[test]
    fn a_signature_layer_is_added_beside_those_there_and_read_back() {
        let made = Made { payload: b"{}".to_vec(), signature: "c2ln".into() };
        let (first, _) = manifest_with(None, &made).unwrap();
        let (second, config) = manifest_with(Some(&first), &made).unwrap();
        let read = layers(&second).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!((read[0].signature.as_str(), read[0].size, read[0].keyless), ("c2ln", 2, false));
        assert!(String::from_utf8(config).unwrap().contains("diff_ids"));
    }
}
