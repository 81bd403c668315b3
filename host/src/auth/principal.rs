//! Who a request comes from, once its credential is checked: a principal,
//! what the audit trail says of it, and the scopes its token carries.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// What a principal's token lets it do at most, whatever the access rules
/// say: read tools need `read`, tools that write need `write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes {
    pub read: bool,
    pub write: bool,
}

impl Scopes {
    /// Both scopes: the local user, a static token without `scopes`.
    pub const ALL: Scopes = Scopes { read: true, write: true };
}

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The local user: stdio, `cordon call`, and HTTP or TCP on loopback with
    /// no authentication configured. The server's full configured rights.
    Local,
    /// Anyone who reaches an endpoint served with `--insecure-no-auth` off
    /// loopback.
    Anonymous,
    /// The holder of a named static token (`[[tokens]]`, or `--token`, which
    /// is named `default`).
    Token { name: String, scopes: Scopes },
    /// The subject of an OAuth access token.
    Subject(Subject),
}

/// An OAuth access token's principal: its issuer and subject, with the
/// client it was issued to, its groups and its scopes as attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub issuer: String,
    pub subject: String,
    /// `client_id` (RFC 9068), else `azp`.
    pub client: Option<String>,
    /// The configured groups claim's values.
    pub groups: Vec<String>,
    pub scopes: Scopes,
}

/// A principal as an audit record names it: never a token or a part of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Named {
    /// `local`, `anonymous`, `token` or `oauth`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// A static token's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Named {
    /// Who, in a few words, as a trace's `enduser.id` says it: `local`,
    /// `anonymous`, `token:NAME`, or an OAuth token's subject.
    pub fn label(&self) -> String {
        match (&self.token, &self.sub) {
            (Some(name), _) => format!("token:{name}"),
            (None, Some(sub)) => sub.clone(),
            (None, None) => self.kind.to_string(),
        }
    }
}

impl Principal {
    /// What the principal's token allows.
    pub fn scopes(&self) -> Scopes {
        match self {
            Principal::Local | Principal::Anonymous => Scopes::ALL,
            Principal::Token { scopes, .. } => *scopes,
            Principal::Subject(subject) => subject.scopes,
        }
    }

    /// The id results are bound to (cursors, handles, parked streams): the
    /// first 16 bytes of the SHA-256 of what names the principal, hex. Two
    /// principals never share one; the id tells nothing about whose it is.
    pub fn id(&self) -> String {
        let named = match self {
            Principal::Local => "local".to_string(),
            Principal::Anonymous => "anonymous".to_string(),
            Principal::Token { name, .. } => format!("token\0{name}"),
            Principal::Subject(s) => format!("oauth\0{}\0{}", s.issuer, s.subject),
        };
        hex::encode(&Sha256::digest(named.as_bytes())[..16])
    }

    /// The principal as the audit trail names it.
    pub fn named(&self) -> Named {
        let bare = |kind| Named { kind, iss: None, sub: None, client: None, token: None };
        match self {
            Principal::Local => bare("local"),
            Principal::Anonymous => bare("anonymous"),
            Principal::Token { name, .. } => Named { token: Some(name.clone()), ..bare("token") },
            Principal::Subject(s) => Named {
                iss: Some(s.issuer.clone()),
                sub: Some(s.subject.clone()),
                client: s.client.clone(),
                ..bare("oauth")
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(issuer: &str, sub: &str) -> Principal {
        Principal::Subject(Subject {
            issuer: issuer.into(),
            subject: sub.into(),
            client: Some("app".into()),
            groups: vec![],
            scopes: Scopes { read: true, write: false },
        })
    }

    #[test]
    fn ids_tell_principals_apart_and_do_not_depend_on_attributes() {
        let alice = subject("https://a.example", "alice");
        assert_eq!(alice.id().len(), 32);
        assert_ne!(alice.id(), subject("https://b.example", "alice").id(), "the issuer counts");
        assert_ne!(alice.id(), subject("https://a.example", "bob").id());
        let token = |name: &str| Principal::Token { name: name.into(), scopes: Scopes::ALL };
        assert_ne!(token("alice").id(), subject("", "alice").id());
        assert_ne!(Principal::Local.id(), Principal::Anonymous.id());
        let mut other_scopes = alice.clone();
        if let Principal::Subject(s) = &mut other_scopes {
            s.scopes = Scopes::ALL;
            s.client = None;
        }
        assert_eq!(alice.id(), other_scopes.id(), "the same subject with another token is the same principal");
    }

    #[test]
    fn the_audit_name_holds_no_secret() {
        let named = serde_json::to_value(subject("https://a.example", "alice").named()).unwrap();
        assert_eq!(
            named,
            serde_json::json!({ "kind": "oauth", "iss": "https://a.example", "sub": "alice", "client": "app" })
        );
        let token = Principal::Token { name: "ci".into(), scopes: Scopes::ALL }.named();
        assert_eq!(serde_json::to_value(token).unwrap(), serde_json::json!({ "kind": "token", "token": "ci" }));
    }
}
