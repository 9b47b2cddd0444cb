//! mcplex as an OAuth resource server (`auth` in the config): a bearer token that is neither the
//! API key nor an agent token is verified as a JWT access token of the configured issuer
//! (`mcplex_oauth::JwtVerifier`), and its claims become a [`Caller`] through the rules. This
//! module is only the guard's adapter; the protocol is `mcplex-oauth`'s.
//!
//! A token is accepted only when: its `alg` is on the allow-list (asymmetric only, so never
//! `none` nor HMAC); a key of the issuer with that `kid` and of the algorithm's type verifies
//! its signature; `iss` is the issuer; `aud` is (or holds) the audience; `exp` has not passed
//! and `nbf` has, within the leeway. Every refusal is one log line that says why and never
//! holds the token.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use mcplex_config::{AuthSettings, Profile};
use mcplex_oauth::{IssuerKeys, JwtVerifier, RefusalLog, Rules, subject_of};
use mcplex_surface::{AccessTokens, Caller, ResourceServer, TokenRefusal, Verification};

/// Verifies the access tokens of one issuer (`mcplex-oauth`'s verifier and rules) and makes a
/// [`Caller`] of each.
pub struct OAuthTokens {
    audience: String,
    verifier: JwtVerifier,
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
        Ok(OAuthTokens {
            audience: auth.audience.clone(),
            verifier: JwtVerifier::new(keys, &auth.algorithms, auth.leeway.as_secs())?,
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
            let keys = warm.verifier.keys();
            if let Err(why) = keys.refresh(keys.generation()).await {
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
        let claims = match self.verifier.access_token(token, &self.audience).await {
            Ok(claims) => claims,
            Err(why) => {
                self.refusals
                    .warn(&format!("refused an OAuth access token: {why}"));
                return Err(TokenRefusal::Invalid);
            }
        };
        let who = subject_of(&claims);
        match self.rules.grant(&claims) {
            Some(scope) => Ok(Caller {
                token: Some(format!("{}{who}", mcplex_state::OAUTH_CALLER_PREFIX).into()),
                scope,
                credential: Some(mcplex_oauth::Secret::new(token.to_owned())),
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
}

impl AccessTokens for OAuthTokens {
    fn verify<'a>(&'a self, token: &'a str) -> Verification<'a> {
        Box::pin(self.check(token))
    }
}
