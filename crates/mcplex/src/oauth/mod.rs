//! mcplex as an OAuth resource server (`auth` in the config): a bearer token that is neither the
//! API key nor an agent token is verified as a JWT access token of the configured issuer, and
//! its claims become a [`Caller`] through the rules.
//!
//! A token is accepted only when: its `alg` is on the allow-list (asymmetric only, so never
//! `none` nor HMAC); a key of the issuer with that `kid` and of the algorithm's type verifies
//! its signature; `iss` is the issuer; `aud` is (or holds) the audience; `exp` has not passed
//! and `nbf` has, within the leeway. Every refusal is one log line that says why and never
//! holds the token.

pub(crate) mod keys;
mod refusals;
pub(crate) mod rules;
#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use mcplex_config::{AuthSettings, Profile};
use mcplex_surface::{AccessTokens, Caller, ResourceServer, TokenRefusal, Verification};
use serde_json::{Map, Value};

use keys::IssuerKeys;
use refusals::RefusalLog;
use rules::Rules;

/// Verifies the access tokens of one issuer.
pub struct OAuthTokens {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway_seconds: u64,
    keys: IssuerKeys,
    rules: Rules,
    refusals: RefusalLog,
}

impl OAuthTokens {
    pub fn new(auth: &AuthSettings, profiles: &[Profile]) -> anyhow::Result<OAuthTokens> {
        OAuthTokens::with_keys(auth, profiles, IssuerKeys::new(&auth.issuer)?)
    }

    fn with_keys(
        auth: &AuthSettings,
        profiles: &[Profile],
        keys: IssuerKeys,
    ) -> anyhow::Result<OAuthTokens> {
        let algorithms = auth
            .algorithms
            .iter()
            .map(|name| Algorithm::from_str(name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OAuthTokens {
            issuer: auth.issuer.clone(),
            audience: auth.audience.clone(),
            algorithms,
            leeway_seconds: auth.leeway.as_secs(),
            keys,
            rules: Rules::new(&auth.rules, profiles),
            refusals: RefusalLog::new(),
        })
    }

    /// The guard's resource-server settings, with `self` verifying the tokens. Starts fetching
    /// the issuer's keys, so the first client does not wait and a wrong issuer shows in the log
    /// at once.
    pub fn serve(self, auth: &AuthSettings) -> ResourceServer {
        let tokens = Arc::new(self);
        let warm = tokens.clone();
        tokio::spawn(async move {
            if let Err(why) = warm.keys.refresh(warm.keys.generation()).await {
                tracing::warn!("{why}; OAuth access tokens are refused until it answers");
            }
        });
        ResourceServer {
            issuer: auth.issuer.clone(),
            resource: auth.resource.clone(),
            scopes: auth.scopes(),
            tokens,
        }
    }

    async fn check(&self, token: &str) -> Result<Caller, TokenRefusal> {
        // Not a JWT at all (a mistyped agent token): refused as before, without an OAuth story.
        if token.split('.').count() != 3 {
            return Err(TokenRefusal::Invalid);
        }
        let claims = match self.claims(token).await {
            Ok(claims) => claims,
            Err(why) => {
                self.refusals
                    .warn(&format!("refused an OAuth access token: {why}"));
                return Err(TokenRefusal::Invalid);
            }
        };
        let who = subject(&claims);
        match self.rules.grant(&claims) {
            Some(scope) => Ok(Caller {
                token: Some(format!("{}{who}", mcplex_state::OAUTH_CALLER_PREFIX).into()),
                scope,
            }),
            None => {
                self.refusals.warn(&format!(
                    "refused the OAuth access token of {who}: it matches none of auth.rules (scopes: {:?})",
                    claims.get("scope").or_else(|| claims.get("scp"))
                ));
                Err(TokenRefusal::InsufficientScope)
            }
        }
    }

    /// The verified claims, or why the token is refused (never the token itself).
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("not a JWT access token ({})", describe(e.kind(), self)))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!(
                "signature algorithm {:?} is not accepted (auth.algorithms)",
                header.alg
            ));
        }
        let kid = header.kid.as_deref();
        let keys = self.keys.for_token(kid, header.alg).await?;
        let validation = self.validation(header.alg);
        let mut refusal = format!("no key fits {:?}", header.alg);
        for key in keys.matching(kid, header.alg) {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => refusal = describe(e.kind(), self),
            }
        }
        Err(format!("{refusal} (alg {:?}, kid {kid:?})", header.alg))
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        validation.leeway = self.leeway_seconds;
        validation.validate_nbf = true;
        let issuer = self.issuer.trim_end_matches('/');
        validation.set_issuer(&[issuer.to_owned(), format!("{issuer}/")]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation
    }
}

impl AccessTokens for OAuthTokens {
    fn verify<'a>(&'a self, token: &'a str) -> Verification<'a> {
        Box::pin(self.check(token))
    }
}

/// Who the token stands for, for the log and the audit: `sub`, else `client_id`.
fn subject(claims: &Map<String, Value>) -> String {
    ["sub", "client_id", "azp"]
        .iter()
        .find_map(|name| claims.get(*name).and_then(Value::as_str))
        .map_or_else(
            || "an unnamed subject".to_owned(),
            |who| who.chars().filter(|c| !c.is_control()).take(128).collect(),
        )
}

/// Why jsonwebtoken refused a token, in the operator's words.
fn describe(kind: &ErrorKind, tokens: &OAuthTokens) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "expired (exp)".into(),
        ErrorKind::ImmatureSignature => "not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => format!("audience (aud) is not {:?}", tokens.audience),
        ErrorKind::InvalidIssuer => format!("issuer (iss) is not {:?}", tokens.issuer),
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("no {claim} claim"),
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key".into(),
        ErrorKind::Json(e) => format!("a header or claims that are not valid JWT JSON: {e}"),
        ErrorKind::Base64(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => "malformed".into(),
        other => format!("{other:?}"),
    }
}
