//! `cordon tool add oci://…` (the pull, and the signature it keeps) and
//! `cordon tool publish PATH.wasm oci://… [--key KEY.pem]`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::Common;
use crate::installed::oci::{Interfaces, OciPin, OciRef, Registry, cosign};
use crate::installed::signature::{SignatureError, Signing};
use crate::registry::{self, Source};
use crate::server::Server;

/// A component pulled for `tool add`: its source and the pin to keep.
pub(super) struct Fetched {
    pub source: Source,
    pub pin: OciPin,
}

/// Pulls `text` (an `oci://` reference), with its signature chosen as
/// `signing` says: one by a trusted key is kept; without one the component
/// is refused when signatures are required, else added unsigned (a signature
/// that does not verify is reported).
pub(super) fn fetch(text: &str, signing: &Signing) -> anyhow::Result<Fetched> {
    let reference = OciRef::parse(text)?;
    let pulled = Registry::for_reference(&reference).pull(&reference)?;
    println!("pulled {reference} (manifest {}, {} bytes)", pulled.manifest_digest, pulled.bytes.len());
    let signature = match cosign::choose(&pulled.signatures, &pulled.manifest_digest, &signing.keys) {
        Ok(signed) => Some(signed),
        Err(why) if signing.required => anyhow::bail!("{reference} is refused: {why}"),
        Err(SignatureError::Missing) => None,
        Err(why) => {
            println!("note: its signature is not used ({why}); it is added unsigned");
            None
        }
    };
    let pin = OciPin {
        reference: reference.to_string(),
        manifest_digest: pulled.manifest_digest,
        manifest: pulled.manifest,
        signature,
    };
    Ok(Fetched { source: Source::pulled(pulled.bytes, reference.to_string()), pin })
}

/// `cordon tool publish`: checks that `component` is a usable tool, pushes it
/// to `target`, and signs it there with `key` when given.
pub(super) fn publish(component: &Path, target: &str, key: Option<&Path>, common: &Common) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(target)?;
    let config = common.config()?;
    let runtime = Server::runtime_only(&config)?;
    let source = Source::component(component)?;
    let bytes = source.bytes.to_vec();
    let tool =
        registry::load(&runtime, source).with_context(|| format!("{} is not a usable tool", component.display()))?;
    let pre = tool.compiled(&runtime)?.pre();
    let interfaces = Interfaces { imports: runtime.imports(pre), exports: runtime.exports(pre) };
    // Read before anything is pushed: a key that cannot sign stops the publish.
    let key = match key {
        Some(path) => {
            let text = crate::ambient::read_file(path).with_context(|| format!("read {}", path.display()))?;
            Some((path, String::from_utf8(text).context("the key is not text")?))
        }
        None => None,
    };
    let registry = Registry::for_reference(&reference);
    let published = registry.publish(&reference, &bytes, interfaces)?;
    println!(
        "published `{}` {} to {reference} (manifest {}, component {})",
        tool.manifest.name, tool.manifest.version, published.manifest_digest, published.component_digest
    );
    if let Some((path, pem)) = key {
        let made = cosign::sign(&pem, &reference.repository(), &published.manifest_digest)
            .map_err(|why| anyhow::anyhow!("the signing key {} cannot be used: {why}", path.display()))?;
        registry.push_signature(&reference, &published.manifest_digest, &made)?;
        println!("signed it with {} ({})", path.display(), cosign::signature_tag(&published.manifest_digest));
    }
    println!("pinned: {}", Registry::pinned(&reference, &published.manifest_digest));
    Ok(ExitCode::SUCCESS)
}
