//! Which authorities name this gateway, for the guard's DNS-rebinding protection: a `Host`
//! header or an `Origin`'s authority must be a loopback name or a trusted host, with at most a
//! port after it. Anything else (`[::1].evil.com`, `evil.com#.localhost`, user info, a path) is
//! neither.

/// Whether a `Host` value names this gateway: as [`authority_allowed`] has it, or an IP address
/// with any port. DNS rebinding needs a name the attacker controls, and a request for an address
/// carries no name; what a browser page at another site sends it is refused by its `Origin`.
pub(crate) fn host_allowed(host: &str, trusted_hosts: &[String]) -> bool {
    authority_allowed(host, trusted_hosts)
        || host_of(host.trim()).is_some_and(|name| name.parse::<std::net::IpAddr>().is_ok())
}

/// Whether an origin's authority (or a `Host` value) is a loopback name, or one of
/// `trusted_hosts` (a host name, or a `host:port` authority), with any port.
pub(crate) fn authority_allowed(authority: &str, trusted_hosts: &[String]) -> bool {
    let authority = authority.trim();
    // Lowered only when it has capitals: every request is checked.
    let lowered;
    let authority = if authority.bytes().any(|b| b.is_ascii_uppercase()) {
        lowered = authority.to_ascii_lowercase();
        lowered.as_str()
    } else {
        authority
    };
    let Some(host) = host_of(authority) else {
        return false;
    };
    is_loopback_name(host)
        || trusted_hosts
            .iter()
            .any(|trusted| *trusted == authority || trusted == host)
}

/// The host part of `host[:port]` or `[v6][:port]`; `None` when the authority is neither (text
/// after `]`, characters no host name has, an unbracketed IPv6 address).
fn host_of(authority: &str) -> Option<&str> {
    let is_port = |port: &str| port.len() <= 5 && port.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return (port_ok && host.parse::<std::net::Ipv6Addr>().is_ok()).then_some(host);
    }
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if is_port(port) => host,
        Some(_) => return None,
        None => authority,
    };
    let name_like = host.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    name_like.then_some(host)
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://authority` → authority; `None` for `null`, anything without a scheme, and
/// anything with user info, a path (but `/`), a query or a fragment.
pub(crate) fn origin_authority(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let clean = !authority.contains(['/', '?', '#', '@', '\\']);
    (scheme_ok && clean).then_some(authority)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Allowed with `mcp.example.com` trusted.
    fn allowed(authority: &str) -> bool {
        authority_allowed(authority, &["mcp.example.com".to_owned()])
    }

    #[test]
    fn hosts_and_origins_parse() {
        assert_eq!(host_of("localhost:8080"), Some("localhost"));
        assert_eq!(host_of("[::1]:8080"), Some("::1"));
        assert_eq!(host_of("example.com"), Some("example.com"));
        assert_eq!(host_of("[::1].evil.com"), None);
        assert_eq!(host_of("[::1]evil"), None);
        assert_eq!(host_of("evil.com#.localhost"), None);
        assert!(is_loopback_name("127.0.0.1") && is_loopback_name("::1"));
        assert!(is_loopback_name("app.localhost"));
        assert!(!is_loopback_name("127.0.0.1.evil.com"));
        assert_eq!(
            origin_authority("http://localhost:3000"),
            Some("localhost:3000")
        );
        assert_eq!(origin_authority("null"), None);
        assert_eq!(origin_authority("http://evil.com@localhost"), None);
        assert!(!allowed("[::1].evil.com"));
        assert!(allowed("[::1]:8080"));
        assert!(allowed("MCP.example.com:443"));
    }

    #[test]
    fn a_host_may_be_any_address_and_an_origin_may_not() {
        for address in ["10.1.2.3", "10.1.2.3:8080", "[fd00::1]:8080", "192.168.0.7"] {
            assert!(host_allowed(address, &[]), "{address}");
            assert!(!authority_allowed(address, &[]), "{address} as an origin");
        }
        for name in [
            "10.1.2.3.evil.com",
            "evil.com",
            "[fd00::1].evil.com",
            "10.1.2",
        ] {
            assert!(!host_allowed(name, &[]), "{name}");
        }
        assert!(
            host_allowed("localhost:1", &[]) && host_allowed("x.example", &["x.example".into()])
        );
    }

    fn loopback_host() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("localhost".to_owned()),
            Just("[::1]".to_owned()),
            Just("[0:0:0:0:0:0:0:1]".to_owned()),
            "[a-z][a-z0-9-]{0,8}".prop_map(|label| format!("{label}.localhost")),
            (0u8..=255, 0u8..=255, 1u8..=254).prop_map(|(a, b, c)| format!("127.{a}.{b}.{c}")),
        ]
    }

    fn port() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), (1u16..).prop_map(|p| format!(":{p}"))]
    }

    /// Text that turns an authority into something else: another host, user info, a path.
    fn tail() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            ".evil.com",
            "].evil.com",
            "evil",
            "@evil.com",
            "#.evil.com",
            "/evil",
            "?x",
            ":80.evil.com",
            ":http",
            " evil",
            "\\evil",
            ".",
        ])
    }
    proptest! {
        /// Every loopback name with any port is accepted, as `Host` and in an `Origin`.
        #[test]
        fn loopback_authorities_are_accepted(host in loopback_host(), port in port()) {
            let authority = format!("{host}{port}");
            prop_assert!(allowed(&authority), "{authority}");
            let origin = format!("http://{authority}");
            prop_assert!(origin_authority(&origin).is_some_and(allowed));
        }

        /// A loopback name with anything appended is never accepted (the `[::1].evil.com`
        /// family), whether or not a port sits between.
        #[test]
        fn appended_text_is_never_loopback(host in loopback_host(), port in port(), tail in tail()) {
            let authority = format!("{host}{port}{tail}");
            prop_assert!(!allowed(&authority), "{authority}");
            let origin = format!("http://{authority}");
            prop_assert!(!origin_authority(&origin).is_some_and(allowed), "{origin}");
        }

        /// Whatever the text, what is accepted is exactly a loopback name or a trusted host,
        /// with at most a port after it.
        #[test]
        fn accepted_authorities_are_a_name_and_a_port(text in "[a-z0-9.:\\[\\]@#/-]{0,24}") {
            if allowed(&text) {
                let host = host_of(&text);
                prop_assert!(host.is_some());
                let host = host.unwrap_or_default();
                prop_assert!(is_loopback_name(host) || host == "mcp.example.com", "{text}");
                let rest = text
                    .strip_prefix('[')
                    .and_then(|t| t.strip_prefix(host))
                    .and_then(|t| t.strip_prefix(']'))
                    .or_else(|| text.strip_prefix(host))
                    .unwrap_or("x");
                prop_assert!(rest.is_empty() || rest.strip_prefix(':').is_some_and(|p| p.chars().all(|c| c.is_ascii_digit())), "{text}");
            }
        }

    }
}
