//! Turns the user's JSON config file into a validated, immutable [`Config`].
//!
//! Owns: the file format (`mcpServers` as an array or as the Claude Desktop / Cursor map, or VS
//! Code's `servers`), defaults,
//! precedence (flag > env > file > default, applied through [`Overrides`]), unknown-key warnings and
//! refusals that name the key, the file and the reason, and which settings an edit applies while
//! the gateway runs ([`reload`]: hot or cold, declared once). Pure: it never reads the disk or the
//! environment itself; the binary hands it text and overrides.
//! Must not: spawn, connect, log, or know any MCP type.

mod access;
mod added;
mod auth;
mod dashboard_sso;
mod duration;
mod error;
mod gateways_own;
mod glob;
mod limits;
mod model;
mod oauth;
mod parse;
mod redact;
mod redact_url;
mod sandbox;
mod secret_args;
mod server_entry;
mod servers;
mod settings;
mod suggest;
mod vscode;

pub use access::{DEFAULT_MAX_BODY_BYTES, HttpSecurity, Profile};
pub use added::{AddedServerError, parse_added_server, with_added};
pub use auth::{AuthRule, AuthSettings, DEFAULT_LEEWAY, RuleMatch, SIGNATURE_ALGORITHMS};
pub use dashboard_sso::{ClaimMatch, DEFAULT_SIGN_IN_SCOPES, DashboardSignIn};
pub use duration::parse_duration;
pub use error::{ConfigError, DurationError, LimitsError, StoreUrlError};
pub use gateways_own::gateways_own;
pub use glob::{Glob, ToolFilter};
pub use limits::{CallLimits, MAX_LIMIT, Rate};
pub use model::{
    AuditSettings, AuditSink, CodeLimits, Config, DEFAULT_CALL_TIMEOUT, DEFAULT_INIT_TIMEOUT,
    DEFAULT_LISTEN, DEFAULT_MAX_MATCHES, DirectToolResponseMode, HotSettings, InheritEnv,
    Lifecycle, Overrides, RoutingMode, SearchModel, ServerConfig, ServerOrigin, StoreUrl,
    ToolResponseMode, Transport,
};
pub use oauth::{ClientSecret, OAuthConfig, OAuthGrant, PerUser};
pub use parse::parse_config;
pub use redact::{REDACTED, Redactor, snippet};
pub use redact_url::{redact_store_url, redact_url, redact_urls, url_credentials};
pub use sandbox::{Sandbox, SandboxLimits};
pub use secret_args::{names_a_secret, without_secret_values};
pub use settings::{Reloaded, reload, reload_listing};

#[cfg(test)]
mod auth_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod oauth_tests;
#[cfg(test)]
mod sandbox_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod typo_tests;
