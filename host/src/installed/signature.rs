//! Signed tools: who made a component, not only that its bytes did not change.
//!
//! A signature is what `cosign sign-blob --key cosign.key TOOL.wasm` prints,
//! and what `openssl dgst -sha256 -sign key.pem TOOL.wasm | base64 -w0`
//! gives: ECDSA P-256 over the SHA-256 of the component, DER-encoded, in
//! base64 (raw DER is read too). The keys the configuration trusts are PEM
//! public keys (`cosign.pub`, `openssl ec -pubout`). A key's id is the first
//! 16 hex digits of the SHA-256 of its DER encoding (SubjectPublicKeyInfo),
//! stable whatever file it is read from. Verification is RustCrypto's `p256`.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{DerSignature, VerifyingKey};
use p256::pkcs8::{DecodePublicKey, EncodePublicKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A signature as the lockfile keeps it: the id of the key that verified it
/// and the signature itself (base64 DER), so every start checks it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signed {
    pub key_id: String,
    pub signature: String,
}

/// One public key the configuration trusts.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    pub id: String,
    pub path: PathBuf,
    key: VerifyingKey,
}

/// The keys the configuration trusts (`trusted-keys`).
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: Vec<TrustedKey>,
}

/// What the configuration says about signatures.
#[derive(Debug, Clone, Default)]
pub struct Signing {
    pub keys: TrustedKeys,
    /// Refuse tools without a valid signature from a trusted key.
    pub required: bool,
}

impl Signing {
    /// The trusted keys at `paths`, and whether a signature is `required`.
    pub fn load(paths: &[PathBuf], required: bool) -> Result<Signing, SignatureError> {
        Ok(Signing { keys: TrustedKeys::load(paths)?, required })
    }

    /// The id of the key that signed an installed tool (its lockfile entry
    /// and its component's bytes), if its signature still verifies. When
    /// signatures are required, a tool without a valid one is an error; else
    /// it is unsigned (and a signature that no longer verifies is logged).
    pub fn signer(&self, entry: &super::lock::Entry, bytes: &[u8]) -> Result<Option<String>, SignatureError> {
        if let Some(pin) = &entry.oci {
            return self.oci_signer(entry, pin);
        }
        match &entry.signature {
            Some(signed) => match self.keys.check(bytes, signed) {
                Ok(()) => Ok(Some(signed.key_id.clone())),
                Err(e) if self.required => Err(e),
                Err(e) => {
                    tracing::warn!(tool = %entry.name, "its signature does not hold ({e}); served as unsigned");
                    Ok(None)
                }
            },
            None if self.required => Err(SignatureError::Missing),
            None => Ok(None),
        }
    }
}

impl Signing {
    /// As `signer`, for a tool from a registry: its cosign signature, kept in
    /// the lockfile, must still sign the pinned manifest with a trusted key.
    fn oci_signer(
        &self,
        entry: &super::lock::Entry,
        pin: &super::oci::OciPin,
    ) -> Result<Option<String>, SignatureError> {
        let checked = match &pin.signature {
            Some(signed) => {
                super::oci::cosign::check(signed, &pin.manifest_digest, &self.keys).map(|()| signed.key_id.clone())
            }
            None => Err(SignatureError::Missing),
        };
        match checked {
            Ok(key_id) => Ok(Some(key_id)),
            Err(e) if self.required => Err(e),
            Err(SignatureError::Missing) => Ok(None),
            Err(e) => {
                tracing::warn!(tool = %entry.name, "its signature does not hold ({e}); served as unsigned");
                Ok(None)
            }
        }
    }
}

/// Why a signature or a key was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureError {
    /// A trusted key's file cannot be read.
    KeyUnreadable { path: PathBuf, reason: String },
    /// A trusted key's file is not a PEM P-256 public key.
    NotAKey { path: PathBuf, reason: String },
    /// The signature is neither base64 nor DER of an ECDSA signature.
    Malformed { reason: String },
    /// No trusted key verifies the signature over these bytes (the
    /// component was changed, or signed with another key); `tried` are the
    /// ids of the trusted keys.
    Unverified { tried: Vec<String> },
    /// The lockfile says the key `key_id` signed it, but that key is not
    /// trusted (any more).
    Untrusted { key_id: String },
    /// The tool carries no signature, and signatures are required.
    Missing,
    /// A registry holds only keyless (certificate) signatures for it, which
    /// are not checked.
    Keyless,
    /// A registry's signature is of another manifest (`signed`).
    OtherBytes { signed: String },
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::KeyUnreadable { path, reason } => {
                write!(f, "the trusted key {} cannot be read: {reason}", path.display())
            }
            SignatureError::NotAKey { path, reason } => {
                write!(f, "the trusted key {} is not a PEM P-256 public key: {reason}", path.display())
            }
            SignatureError::Malformed { reason } => {
                write!(f, "the signature is not a base64 or DER ECDSA signature (cosign sign-blob's output): {reason}")
            }
            SignatureError::Unverified { tried } if tried.is_empty() => {
                f.write_str("no key is trusted, so no signature can be verified: add one with --trusted-key PEM")
            }
            SignatureError::Unverified { tried } => write!(
                f,
                "the signature does not verify with any trusted key (tried {}): the component was changed after \
                 signing, or signed with another key",
                tried.join(", ")
            ),
            SignatureError::Untrusted { key_id } => {
                write!(f, "it was signed with the key {key_id}, which the configuration no longer trusts")
            }
            SignatureError::Missing => f.write_str(
                "it has no signature, and the configuration requires one (require-signatures): add it again with \
                 `cordon tool add … --signature FILE` (or sign it in its registry: `cordon tool publish … --key`)",
            ),
            SignatureError::Keyless => f.write_str(
                "its registry holds only keyless signatures (a Fulcio certificate), which Cordon does not accept: \
                 without a pinned signer identity and issuer they would admit anyone; sign it with a key \
                 (`cosign sign --key`, `cordon tool publish … --key`)",
            ),
            SignatureError::OtherBytes { signed } => write!(
                f,
                "its signature is of other bytes (the manifest {signed}): it was copied from another component, or \
                 the tag was moved after signing"
            ),
        }
    }
}

impl std::error::Error for SignatureError {}

impl TrustedKeys {
    /// Reads the PEM public keys at `paths`.
    pub fn load(paths: &[PathBuf]) -> Result<TrustedKeys, SignatureError> {
        let keys = paths.iter().map(|path| TrustedKey::load(path)).collect::<Result<_, _>>()?;
        Ok(TrustedKeys { keys })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The trusted key whose signature `signature` (base64 or DER) is over
    /// `bytes`, as the lockfile keeps it.
    pub fn verify(&self, bytes: &[u8], signature: &[u8]) -> Result<Signed, SignatureError> {
        let (der, parsed) = parse(signature)?;
        match self.keys.iter().find(|k| k.key.verify(bytes, &parsed).is_ok()) {
            Some(key) => {
                Ok(Signed { key_id: key.id.clone(), signature: base64::engine::general_purpose::STANDARD.encode(&der) })
            }
            None => Err(SignatureError::Unverified { tried: self.keys.iter().map(|k| k.id.clone()).collect() }),
        }
    }

    /// Checks a lockfile's signature against `bytes` again: its key must
    /// still be trusted and verify it.
    pub fn check(&self, bytes: &[u8], signed: &Signed) -> Result<(), SignatureError> {
        let Some(key) = self.keys.iter().find(|k| k.id == signed.key_id) else {
            return Err(SignatureError::Untrusted { key_id: signed.key_id.clone() });
        };
        let (_, parsed) = parse(signed.signature.as_bytes())?;
        key.key.verify(bytes, &parsed).map_err(|_| SignatureError::Unverified { tried: vec![key.id.clone()] })
    }
}

impl TrustedKey {
    fn load(path: &Path) -> Result<TrustedKey, SignatureError> {
        let bytes = crate::ambient::read_file(path)
            .map_err(|e| SignatureError::KeyUnreadable { path: path.to_path_buf(), reason: e.to_string() })?;
        let not_a_key = |reason: String| SignatureError::NotAKey { path: path.to_path_buf(), reason };
        let text = String::from_utf8(bytes).map_err(|_| not_a_key("not text".into()))?;
        let key = VerifyingKey::from_public_key_pem(text.trim()).map_err(|e| not_a_key(e.to_string()))?;
        let der = key.to_public_key_der().map_err(|e| not_a_key(e.to_string()))?;
        let id = hex::encode(&Sha256::digest(der.as_bytes())[..8]);
        Ok(TrustedKey { id, path: path.to_path_buf(), key })
    }
}

/// A signature given as base64 (cosign, `openssl … | base64`) or as raw DER
/// (`openssl dgst -sign` alone): its DER, and the signature it encodes.
fn parse(signature: &[u8]) -> Result<(Vec<u8>, DerSignature), SignatureError> {
    let malformed = |reason: String| SignatureError::Malformed { reason };
    let der = match signature.first() {
        Some(0x30) => signature.to_vec(),
        _ => {
            let text: Vec<u8> = signature.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| malformed(e.to_string()))?
        }
    };
    let parsed = DerSignature::from_bytes(&der).map_err(|e| malformed(e.to_string()))?;
    Ok((der, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A key pair made by `openssl`, as a tool author would, and a signature
    /// over `bytes` made with it (`.ci/run` installs openssl).
    fn openssl_signed(dir: &Path, name: &str, bytes: &[u8]) -> Option<(PathBuf, Vec<u8>)> {
        let key = dir.join(format!("{name}.key"));
        let public = dir.join(format!("{name}.pub"));
        let blob = dir.join(format!("{name}.blob"));
        std::fs::write(&blob, bytes).unwrap();
        let ok = |args: &[&str]| Command::new("openssl").args(args).output().ok().filter(|o| o.status.success());
        ok(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.to_str()?])?;
        ok(&["ec", "-in", key.to_str()?, "-pubout", "-out", public.to_str()?])?;
        let signed = ok(&["dgst", "-sha256", "-sign", key.to_str()?, blob.to_str()?])?;
        Some((public, signed.stdout))
    }

    #[test]
    fn an_openssl_signature_verifies_with_its_key_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let component = b"\0asm component bytes";
        let (public, der) = openssl_signed(dir.path(), "author", component).expect("openssl makes keys and signs");
        let (other, _) = openssl_signed(dir.path(), "other", b"x").unwrap();
        let keys = TrustedKeys::load(&[other.clone(), public.clone()]).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        let signed = keys.verify(component, format!("{b64}\n").as_bytes()).unwrap();
        assert_eq!(signed, keys.verify(component, &der).unwrap(), "raw DER reads the same");
        let author_id = TrustedKeys::load(std::slice::from_ref(&public)).unwrap().keys[0].id.clone();
        assert_eq!(signed.key_id, author_id);
        keys.check(component, &signed).unwrap();

        let tampered = b"\0asm component bytez";
        let Err(SignatureError::Unverified { tried }) = keys.verify(tampered, &der) else { panic!("tampered") };
        assert_eq!(tried.len(), 2);
        assert!(keys.check(tampered, &signed).is_err());
        let only_other = TrustedKeys::load(&[other]).unwrap();
        assert!(matches!(only_other.verify(component, &der), Err(SignatureError::Unverified { .. })));
        assert_eq!(only_other.check(component, &signed), Err(SignatureError::Untrusted { key_id: author_id }));
        assert!(matches!(keys.verify(component, b"not base64!"), Err(SignatureError::Malformed { .. })));
    }

    #[test]
    fn a_key_file_that_is_not_a_public_key_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.pub");
        std::fs::write(&path, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").unwrap();
        let Err(SignatureError::NotAKey { path: named, .. }) = TrustedKeys::load(std::slice::from_ref(&path)) else {
            panic!("refused")
        };
        assert_eq!(named, path);
        let missing = dir.path().join("missing.pub");
        assert!(matches!(TrustedKeys::load(&[missing]), Err(SignatureError::KeyUnreadable { .. })));
    }
}
