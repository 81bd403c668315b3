//! Following redirects: which statuses redirect, where a `Location` leads
//! from the current URL, and which headers go on to another origin.

use url::Url;

use crate::args;

/// Headers that carry credentials: sent only while the redirects stay on the
/// origin of the URL the call named.
pub const CREDENTIAL_HEADERS: [&str; 2] = ["authorization", "cookie"];

/// Whether `status` is a redirect this tool follows: 301, 302, 303, 307 and
/// 308 (a GET stays a GET for all of them).
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The URL a `Location` header leads to from `current`: resolved against it
/// when relative, and checked as the call's URL is (http or https, a host, no
/// credentials; the fragment dropped). The error completes a sentence about
/// the redirect ("to … which …").
pub fn resolve(current: &Url, location: &str) -> Result<Url, String> {
    let location = location.trim();
    if location.is_empty() {
        return Err("to an empty `Location`".into());
    }
    let next = current.join(location).map_err(|e| format!("to `{location}`, which is not a valid URL: {e}"))?;
    args::requestable(next).map_err(|why| format!("to a URL that {why}"))
}

/// The headers to send to `url`: all of `headers`, less those carrying
/// credentials once the redirects have left `origin` (the call's URL's
/// origin). `left` says whether they have already; it is updated, so the
/// credentials are not sent again on a way back.
pub fn headers_for(headers: &[(String, String)], origin: &Url, url: &Url, left: &mut bool) -> Vec<(String, String)> {
    *left |= url.origin() != origin.origin();
    headers.iter().filter(|(name, _)| !*left || !CREDENTIAL_HEADERS.contains(&name.as_str())).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a URL the test knows is valid.
    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn only_the_five_redirect_statuses_are_followed() {
        let followed: Vec<u16> = (100..600).filter(|&s| is_redirect(s)).collect();
        assert_eq!(followed, [301, 302, 303, 307, 308]);
    }

    #[test]
    fn locations_resolve_against_the_current_url() {
        let base = url("https://api.example.com/v1/items/list?page=2");
        let cases = [
            ("/v2/items", "https://api.example.com/v2/items"),
            ("next?page=3", "https://api.example.com/v1/items/next?page=3"),
            ("../users", "https://api.example.com/v1/users"),
            ("?page=3", "https://api.example.com/v1/items/list?page=3"),
            ("//cdn.example.com/x", "https://cdn.example.com/x"),
            ("http://other.example:8080/y#frag", "http://other.example:8080/y"),
            ("  /spaced  ", "https://api.example.com/spaced"),
        ];
        for (location, expect) in cases {
            assert_eq!(resolve(&base, location).unwrap().as_str(), expect, "{location}");
        }
    }

    #[test]
    fn locations_that_cannot_be_requested_are_refused() {
        let base = url("https://api.example.com/");
        assert!(resolve(&base, "").unwrap_err().contains("empty"));
        assert!(resolve(&base, "ftp://files.example.com/").unwrap_err().contains("only http and https"));
        assert!(resolve(&base, "file:///etc/passwd").unwrap_err().contains("only http and https"));
        assert!(resolve(&base, "https://u:p@api.example.com/").unwrap_err().contains("credentials"));
        assert!(resolve(&base, "http://[::1").unwrap_err().contains("not a valid URL"));
    }

    #[test]
    fn credentials_stay_on_the_origin() {
        let headers = vec![("accept".to_string(), "*/*".to_string()), ("authorization".into(), "Bearer t".into())];
        let origin = url("https://api.example.com/a");
        let mut left = false;
        assert_eq!(headers_for(&headers, &origin, &origin, &mut left).len(), 2);
        assert_eq!(headers_for(&headers, &origin, &url("https://api.example.com/b"), &mut left).len(), 2);
        // Another scheme, port or host is another origin.
        for other in ["http://api.example.com/a", "https://api.example.com:8443/a", "https://cdn.example.com/a"] {
            let mut left = false;
            let sent = headers_for(&headers, &origin, &url(other), &mut left);
            assert_eq!(sent, [("accept".to_string(), "*/*".to_string())], "{other}");
            assert!(left);
        }
        // Once left, not sent again on the way back.
        let mut left = false;
        headers_for(&headers, &origin, &url("https://cdn.example.com/a"), &mut left);
        assert_eq!(headers_for(&headers, &origin, &origin, &mut left).len(), 1);
    }
}
