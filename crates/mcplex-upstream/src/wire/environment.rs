//! The environment a stdio upstream starts with. Not the gateway's: an upstream (a quarantined,
//! unreviewed one too) must not see the gateway's cloud credentials, tokens or `MCPLEX_*`
//! settings. It gets the small allow-list below, what its server's `inherit_env` adds, and its
//! own configured `env` on top. The gateway's own variables (`MCPLEX_*`: its admin key, token
//! key and store URL among them) are never inherited, whatever `inherit_env` says.

use std::collections::BTreeMap;
use std::ffi::OsString;

use mcplex_config::{InheritEnv, gateways_own};

/// Variables every stdio upstream inherits, each because something ordinary needs it to start.
/// None of them is a credential. Left out on purpose: proxies (`HTTPS_PROXY` & co. may carry
/// `user:password@`), `NODE_*`/`NPM_CONFIG_*` (`NODE_AUTH_TOKEN`, `npm_config__authToken`),
/// `UV_*`/`PIP_*` (index URLs with credentials), `XDG_SESSION_COOKIE`-like session secrets.
/// A server that needs one lists it in `inherit_env`.
pub(crate) const ALLOWED: &[&str] = &[
    // Finding the command and what it runs (npx → node, uvx → python).
    "PATH",
    // npm's and uv's caches and config live under it; `~` in paths.
    "HOME",
    // Who runs the process; some runtimes derive per-user paths from them.
    "USER",
    "LOGNAME",
    // npm runs package scripts through it.
    "SHELL",
    // Text encoding and locale (Python's stdio encoding follows them).
    "LANG",
    "LANGUAGE",
    "LC_*",
    // The local time zone (mcp-server-time's default zone).
    "TZ",
    // Where temporary files go.
    "TMPDIR",
    "TEMP",
    "TMP",
    // Some CLIs read it to decide on colour or line editing.
    "TERM",
    // Where caches (uv, npm, pip), config and runtime sockets live; paths only.
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    // Extra CA certificates (file paths, public data): downloads through a TLS-inspecting proxy.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// The variables of `gateway` (the gateway's environment) that a child with `inherit` gets.
/// The server's own `env` is not included: the caller sets it on top.
pub(crate) fn inherited(
    gateway: impl IntoIterator<Item = (OsString, OsString)>,
    inherit: &InheritEnv,
) -> BTreeMap<OsString, OsString> {
    gateway
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            if gateways_own(name) {
                return false;
            }
            match inherit {
                InheritEnv::All => true,
                InheritEnv::AllowList(extra) => {
                    ALLOWED.iter().any(|allowed| matches(allowed, name))
                        || extra.iter().any(|glob| glob.matches(name))
                }
            }
        })
        .collect()
}

/// The values a child with `inherit` gets beyond the allow-list that may be credentials, for
/// its server's redactor to hide as it hides the server's own `env`: what an `inherit_env` list
/// names on purpose (a `GITHUB_TOKEN`), and of the whole environment (`true`) the variables
/// named like credentials (`*_API_KEY`, `*_TOKEN`, `*_PASSWORD`…) and the credentials of URLs
/// (`HTTPS_PROXY=http://user:pw@…`, `DATABASE_URL`). Hiding every value of a whole environment
/// (`PWD`, `USER`, `LOG_LEVEL=info`) would mangle what a server prints; the allow-list's values
/// (paths, a locale) are no secrets.
pub(crate) fn passed_values(
    gateway: impl IntoIterator<Item = (OsString, OsString)>,
    inherit: &InheritEnv,
) -> Vec<String> {
    let mut values = Vec::new();
    for (name, value) in inherited(gateway, inherit) {
        let (name, value) = (name.to_string_lossy(), value.to_string_lossy());
        if ALLOWED.iter().any(|allowed| matches(allowed, &name)) {
            continue;
        }
        if !matches!(inherit, InheritEnv::All) || mcplex_config::names_a_secret(&name) {
            values.push(value.into_owned());
        } else if value.contains("://") {
            values.extend(mcplex_config::url_credentials(&value));
        }
    }
    values
}

/// `name` is `allowed`, or starts with its prefix when `allowed` ends in `*`.
fn matches(allowed: &str, name: &str) -> bool {
    match allowed.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => allowed == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcplex_config::Glob;

    fn gateway() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_REGION", "eu"),
            ("MCPLEX_LOG", "debug"),
            (
                "MCPLEX_API_KEY",
                "mcplex_admin_0123456789abcdef0123456789abcdef",
            ),
            ("MCPLEX_STORE", "postgres://mcplex:password@db/mcplex"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer collector",
            ),
            ("GITHUB_TOKEN", "ghp"),
            ("HTTPS_PROXY", "http://u:p@proxy"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn names(env: &BTreeMap<OsString, OsString>) -> Vec<&str> {
        env.keys().filter_map(|k| k.to_str()).collect()
    }

    #[test]
    fn only_the_allow_list_passes_by_default() {
        let env = inherited(gateway(), &InheritEnv::default());
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn inherit_env_adds_names_and_globs_or_everything() {
        let extra = InheritEnv::AllowList(vec![Glob::new("AWS_REGION"), Glob::new("*_PROXY")]);
        let env = inherited(gateway(), &extra);
        assert_eq!(
            names(&env),
            ["AWS_REGION", "HOME", "HTTPS_PROXY", "LC_ALL", "PATH"]
        );
        let everything = inherited(gateway(), &InheritEnv::All);
        assert_eq!(
            names(&everything),
            [
                "AWS_REGION",
                "AWS_SECRET_ACCESS_KEY",
                "GITHUB_TOKEN",
                "HOME",
                "HTTPS_PROXY",
                "LC_ALL",
                "PATH"
            ]
        );
    }

    #[test]
    fn what_inherit_env_passes_beyond_the_allow_list_is_for_the_redactor() {
        assert!(passed_values(gateway(), &InheritEnv::default()).is_empty());
        let extra = InheritEnv::AllowList(vec![Glob::new("GITHUB_TOKEN"), Glob::new("PATH")]);
        assert_eq!(passed_values(gateway(), &extra), ["ghp"]);
        let everything = passed_values(gateway(), &InheritEnv::All);
        assert!(
            ["ghp", "secret", "u:p", "p"]
                .iter()
                .all(|value| everything.contains(&value.to_string()))
                && !everything.contains(&"eu".to_owned())
                && !everything.iter().any(|value| value.contains("proxy")),
            "of the whole environment, what is named like a credential and URLs' credentials; never the gateway's own: {everything:?}"
        );
    }

    #[test]
    fn the_gateways_own_variables_are_never_inherited() {
        for inherit in [
            InheritEnv::All,
            InheritEnv::AllowList(vec![Glob::new("MCPLEX_*"), Glob::new("OTEL_*")]),
            InheritEnv::AllowList(vec![Glob::new("MCPLEX_API_KEY"), Glob::new("*")]),
        ] {
            let env = inherited(gateway(), &inherit);
            assert!(
                names(&env)
                    .iter()
                    .all(|name| !name.starts_with("MCPLEX_") && !name.starts_with("OTEL_")),
                "{inherit:?}: {:?}",
                names(&env)
            );
        }
    }
}
