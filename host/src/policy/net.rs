//! Network grants: where an installed tool may send HTTP requests
//! (`cordon tool add … --grant net:https://api.example.com`). A grant names a
//! scheme, a host (or `*.` and a domain, for its subdomains) and a port (the
//! scheme's by default); nothing else is reachable. Which addresses a granted
//! name may lead to is decided here too ([`Destination::permits`]): never a
//! loopback, private, link-local, metadata or otherwise internal address,
//! unless the grant names that address literally.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use super::SpecError;

/// The schemes a grant may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    pub fn parse(text: &str) -> Option<Scheme> {
        match text.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }
}

/// The host part of a grant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum HostPattern {
    /// One DNS name, lower case, without a trailing dot.
    Name(String),
    /// Every name strictly under this domain (`*.example.com`: `a.example.com`,
    /// `a.b.example.com`, not `example.com`).
    Under(String),
    /// An address, named literally: the one way to reach an internal address.
    Ip(IpAddr),
}

/// One network grant: a scheme, a host pattern and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NetGrant {
    scheme: Scheme,
    host: HostPattern,
    port: u16,
}

/// Where one request goes, as the tool asked: its scheme, host (a name or an
/// address literal) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub scheme: Scheme,
    pub host: Host,
    pub port: u16,
}

/// A request's host: a DNS name (lower case, no trailing dot) or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// Reads a URL's host: `[v6]`, an IPv4 address, or a DNS name (letters,
    /// digits, `-` and `.`; an internationalised name in its `xn--` form).
    pub fn parse(text: &str) -> Option<Host> {
        if let Some(v6) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            return v6.parse::<Ipv6Addr>().ok().map(|ip| Host::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = text.parse::<Ipv4Addr>() {
            return Some(Host::Ip(IpAddr::V4(ip)));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        // A name that is all digits and dots is a malformed address, not a name.
        let numeric = name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        (name.len() <= 253 && !numeric && name.split('.').all(label_ok)).then_some(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => ip.fmt(f),
        }
    }
}

impl Destination {
    /// The destination of an absolute `http`/`https` URL's scheme and
    /// authority (`host[:port]`); `None` for anything else.
    pub fn of(scheme: &str, authority: &str) -> Option<Destination> {
        let scheme = Scheme::parse(scheme)?;
        if authority.contains('@') {
            return None;
        }
        let (host, port) = split_port(authority)?;
        let port = match port {
            Some(port) => port,
            None => scheme.default_port(),
        };
        Some(Destination { scheme, host: Host::parse(host)?, port })
    }

    /// Whether `address` (one the host resolved the name to, or the literal
    /// itself) may be connected to: an internal address only when a grant
    /// names it literally, any other address once a grant admits the name.
    pub fn permits(&self, grant: &NetGrant, address: IpAddr) -> bool {
        match &grant.host {
            HostPattern::Ip(ip) => *ip == address,
            _ => !is_internal(address),
        }
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// `host[:port]`, the host kept as written (`[v6]` with its brackets); the
/// port, when given, must be a number 1-65535.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    match port {
        None => Some((host, None)),
        Some(p) => match p.parse::<u16>() {
            Ok(port) if port > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some((host, Some(port))),
            _ => None,
        },
    }
}

impl NetGrant {
    /// Reads the part after `net:`: `SCHEME://HOST[:PORT]`, with an optional
    /// trailing `/`; HOST may start with `*.`.
    pub fn parse(text: &str) -> Result<NetGrant, SpecError> {
        let bad = || SpecError::NetGrant(text.to_string());
        let (scheme, rest) = text.split_once("://").ok_or_else(bad)?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#', '@']) {
            return Err(bad());
        }
        let (host_text, port) = split_port(authority).ok_or_else(bad)?;
        let scheme = Scheme::parse(scheme).ok_or_else(bad)?;
        let host = match host_text.strip_prefix("*.") {
            Some(domain) => match Host::parse(domain) {
                Some(Host::Name(domain)) if domain.contains('.') => HostPattern::Under(domain),
                _ => return Err(bad()),
            },
            None => match Host::parse(host_text).ok_or_else(bad)? {
                Host::Name(name) => HostPattern::Name(name),
                Host::Ip(ip) => HostPattern::Ip(ip),
            },
        };
        Ok(NetGrant { scheme, host, port: port.unwrap_or(scheme.default_port()) })
    }

    /// Whether this grant admits requests to `dest` (scheme, host and port).
    pub fn admits(&self, dest: &Destination) -> bool {
        if self.scheme != dest.scheme || self.port != dest.port {
            return false;
        }
        match (&self.host, &dest.host) {
            (HostPattern::Name(granted), Host::Name(name)) => granted == name,
            (HostPattern::Under(domain), Host::Name(name)) => {
                name.strip_suffix(domain.as_str()).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
            }
            (HostPattern::Ip(granted), Host::Ip(ip)) => granted == ip,
            _ => false,
        }
    }
}

impl fmt::Display for NetGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "net:{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Name(name) => f.write_str(name)?,
            HostPattern::Under(domain) => write!(f, "*.{domain}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
        }
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl serde::Serialize for NetGrant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = self.to_string();
        s.serialize_str(text.strip_prefix("net:").unwrap_or(&text))
    }
}

impl<'de> serde::Deserialize<'de> for NetGrant {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NetGrant, D::Error> {
        let text = String::deserialize(d)?;
        NetGrant::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A tool's network grants; none means no network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGrants(Option<Arc<[NetGrant]>>);

impl NetGrants {
    pub fn new(grants: &[NetGrant]) -> NetGrants {
        NetGrants((!grants.is_empty()).then(|| grants.into()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn iter(&self) -> impl Iterator<Item = &NetGrant> {
        self.0.iter().flat_map(|g| g.iter())
    }

    /// The first grant admitting `dest`, if any.
    pub fn admitting(&self, dest: &Destination) -> Option<&NetGrant> {
        self.iter().find(|g| g.admits(dest))
    }

    /// The grants as `cordon tool add` takes them, for a message.
    pub fn describe(&self) -> String {
        match self.is_empty() {
            true => "none".to_string(),
            false => self.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", "),
        }
    }
}

/// Whether an address is one no name may lead a tool to: loopback,
/// unspecified, private (RFC 1918, unique local `fc00::/7`), link-local (the
/// cloud metadata services' `169.254.169.254`, `fe80::/10`), shared
/// (`100.64.0.0/10`), multicast, broadcast and reserved ranges, and IPv6
/// forms that embed such an IPv4 address (mapped, compatible, NAT64, 6to4).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
    if s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return internal_v4(embedded(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return internal_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return internal_v4(embedded(s[1], s[2]));
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] == 0x2001 && s[1] == 0x0db8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(url: &str) -> Destination {
        let (scheme, authority) = url.split_once("://").unwrap();
        Destination::of(scheme, authority).unwrap()
    }

    #[test]
    fn grants_read_scheme_host_and_port_and_print_as_written() {
        for (text, shown) in [
            ("https://api.example.com", "net:https://api.example.com"),
            ("https://API.Example.com/", "net:https://api.example.com"),
            ("https://api.example.com:443", "net:https://api.example.com"),
            ("http://127.0.0.1:8080", "net:http://127.0.0.1:8080"),
            ("https://*.example.com", "net:https://*.example.com"),
            ("http://[::1]:9000", "net:http://[::1]:9000"),
        ] {
            assert_eq!(NetGrant::parse(text).unwrap().to_string(), shown, "{text}");
        }
        for bad in [
            "api.example.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://user@example.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://*.com",
            "https://*",
            "https://exa mple.com",
            "https://",
            "https://999.1.1.1",
        ] {
            assert!(matches!(NetGrant::parse(bad), Err(SpecError::NetGrant(_))), "{bad}");
        }
    }

    #[test]
    fn a_grant_admits_its_scheme_host_and_port_only() {
        let grant = NetGrant::parse("https://api.example.com").unwrap();
        assert!(grant.admits(&dest("https://api.example.com")));
        assert!(grant.admits(&dest("https://API.example.com.:443")));
        assert!(!grant.admits(&dest("http://api.example.com")));
        assert!(!grant.admits(&dest("https://api.example.com:8443")));
        assert!(!grant.admits(&dest("https://example.com")));
        assert!(!grant.admits(&dest("https://api.example.com.evil.net")));
        let wild = NetGrant::parse("https://*.example.com").unwrap();
        assert!(wild.admits(&dest("https://a.example.com")));
        assert!(wild.admits(&dest("https://a.b.example.com")));
        assert!(!wild.admits(&dest("https://example.com")));
        assert!(!wild.admits(&dest("https://badexample.com")));
        let literal = NetGrant::parse("http://127.0.0.1:8080").unwrap();
        assert!(literal.admits(&dest("http://127.0.0.1:8080")));
        assert!(!literal.admits(&dest("http://localhost:8080")));
    }

    #[test]
    fn internal_addresses_are_reached_only_through_a_literal_grant() {
        let by_name = NetGrant::parse("https://api.example.com").unwrap();
        let literal = NetGrant::parse("http://169.254.169.254").unwrap();
        let d = dest("https://api.example.com");
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            let ip: IpAddr = internal.parse().unwrap();
            assert!(is_internal(ip), "{internal}");
            assert!(!d.permits(&by_name, ip), "{internal} through a name");
        }
        assert!(d.permits(&literal, "169.254.169.254".parse().unwrap()));
        assert!(!d.permits(&literal, "169.254.169.253".parse().unwrap()));
        for public in ["93.184.216.34", "8.8.8.8", "2606:2800:220:1::", "::ffff:8.8.8.8"] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(!is_internal(ip), "{public}");
            assert!(d.permits(&by_name, ip));
        }
    }

    #[test]
    fn destinations_refuse_what_is_not_an_http_authority() {
        assert_eq!(dest("https://h.example:8443").port, 8443);
        assert_eq!(dest("http://h.example").port, 80);
        assert_eq!(dest("http://[::1]").host, Host::Ip("::1".parse().unwrap()));
        assert!(Destination::of("file", "x").is_none());
        assert!(Destination::of("https", "u:p@h.example").is_none());
        assert!(Destination::of("https", "h.example:x").is_none());
        assert_eq!(dest("https://h.example:8443").to_string(), "https://h.example:8443");
        assert_eq!(dest("https://h.example:443").to_string(), "https://h.example");
    }
}
