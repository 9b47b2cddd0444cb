//! JWTs of one issuer, verified against its keys ([`IssuerKeys`]): the gateway's access tokens
//! (`auth`: the audience, `nbf`) and the ID tokens of the dashboard's sign-in (the client as the
//! audience, the sign-in's `nonce`). One key loop for both: the `alg` must be on the allow-list
//! (asymmetric only, so never `none` nor HMAC), a key of the issuer with that `kid` and of the
//! algorithm's type must verify the signature, `iss` must be the issuer, `exp` not passed, within
//! the leeway. A refusal says why in the operator's words and never holds the token.

use std::str::FromStr;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use crate::{IssuerKeys, JwtError, OAuthError};

/// The claims of a verified JWT.
pub type Claims = Map<String, Value>;

/// Verifies the JWTs one issuer signs.
pub struct JwtVerifier {
    issuer: String,
    algorithms: Vec<Algorithm>,
    leeway_seconds: u64,
    keys: IssuerKeys,
}

impl JwtVerifier {
    /// `algorithms` by their JOSE names (`RS256`, `ES256`, ...); one jsonwebtoken does not know
    /// is refused.
    pub fn new(
        keys: IssuerKeys,
        algorithms: &[String],
        leeway_seconds: u64,
    ) -> Result<JwtVerifier, OAuthError> {
        let algorithms = algorithms
            .iter()
            .map(|name| {
                Algorithm::from_str(name).map_err(|_| {
                    OAuthError::Metadata(format!("{name:?} is not a JWT signature algorithm"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JwtVerifier {
            issuer: keys.issuer().to_owned(),
            algorithms,
            leeway_seconds,
            keys,
        })
    }

    /// The issuer's keys (and, through them, its metadata).
    pub fn keys(&self) -> &IssuerKeys {
        &self.keys
    }

    /// The claims of access token `token` for `audience`, or why it is refused. `sub` is
    /// required (RFC 9068: it names who the token stands for, and the gateway keys each
    /// caller's sessions, limits and upstream logins by it): without it, every such token would
    /// be one caller.
    pub async fn access_token(&self, token: &str, audience: &str) -> Result<Claims, JwtError> {
        let mut validation = self.validation(audience);
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        self.verify(token, validation, audience).await
    }

    /// The claims of the ID token `token` the issuer gave client `client_id` for the sign-in
    /// that sent `nonce`, or why it is refused.
    pub async fn id_token(
        &self,
        token: &str,
        client_id: &str,
        nonce: &str,
    ) -> Result<Claims, JwtError> {
        let mut validation = self.validation(client_id);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = self
            .verify(token, validation, client_id)
            .await
            .map_err(|why| JwtError::IdToken(Box::new(why)))?;
        if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(JwtError::Nonce);
        }
        Ok(claims)
    }

    fn validation(&self, audience: &str) -> Validation {
        // The algorithm is set per token (it must be on the allow-list first).
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = self.leeway_seconds;
        let issuer = self.issuer.trim_end_matches('/');
        validation.set_issuer(&[issuer.to_owned(), format!("{issuer}/")]);
        validation.set_audience(&[audience]);
        validation
    }

    async fn verify(
        &self,
        token: &str,
        mut validation: Validation,
        audience: &str,
    ) -> Result<Claims, JwtError> {
        let describe = |kind: &ErrorKind| describe(kind, &self.issuer, audience);
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| JwtError::NotAJwt(describe(e.kind())))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(JwtError::Algorithm(header.alg));
        }
        validation.algorithms = vec![header.alg];
        let kid = header.kid.as_deref();
        let keys = self.keys.for_token(kid, header.alg).await?;
        let mut refusal = format!("no key fits {:?}", header.alg);
        for key in keys.matching(kid, header.alg) {
            match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => refusal = describe(e.kind()),
            }
        }
        Err(JwtError::Refused {
            reason: refusal,
            alg: header.alg,
            kid: kid.map(str::to_owned),
        })
    }
}

/// Who a token stands for, for the log and the audit: `sub`, else `client_id`, else `azp`,
/// without control characters, at most 128 characters.
pub fn subject_of(claims: &Claims) -> String {
    ["sub", "client_id", "azp"]
        .iter()
        .find_map(|name| claims.get(*name).and_then(Value::as_str))
        .map_or_else(
            || "an unnamed subject".to_owned(),
            |who| who.chars().filter(|c| !c.is_control()).take(128).collect(),
        )
}

/// Why jsonwebtoken refused a token, in the operator's words.
fn describe(kind: &ErrorKind, issuer: &str, audience: &str) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "expired (exp)".into(),
        ErrorKind::ImmatureSignature => "not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => format!("audience (aud) is not {audience:?}"),
        ErrorKind::InvalidIssuer => format!("issuer (iss) is not {issuer:?}"),
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("no {claim} claim"),
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key".into(),
        ErrorKind::Json(e) => format!("a header or claims that are not valid JWT JSON: {e}"),
        ErrorKind::Base64(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => "malformed".into(),
        other => format!("{other:?}"),
    }
}
