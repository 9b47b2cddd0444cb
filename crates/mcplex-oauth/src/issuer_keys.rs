//! The resource-server half: an issuer's signing keys, which verify the JWTs it issues (access
//! tokens for the gateway, ID tokens of the dashboard's sign-in): where they are (`jwks_uri`
//! from its metadata, found where discovery looks for an authorization server's), fetched and
//! cached, refreshed when a token names a key the
//! cache does not hold and when the cache is an hour old.
//!
//! A refresh happens at most once per [`REFRESH_COOLDOWN`], whatever asks for it: tokens with
//! made-up `kid`s cannot make the gateway hammer the issuer. Requests read the cache without a
//! lock; the ones that need a refresh await it (one fetch at a time, the others then reuse it),
//! so no worker thread ever blocks on the network.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use url::Url;

use crate::{IssuerError, JwtError, OAuthError, same_issuer, server_metadata_urls};

/// The least time between two fetches of the keys.
pub const REFRESH_COOLDOWN: Duration = Duration::from_secs(5);
/// Keys older than this are fetched again before use (a key the issuer withdrew stops working).
const MAX_AGE: Duration = Duration::from_secs(3600);
/// One metadata or key-set request.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The keys of one issuer.
pub struct IssuerKeys {
    issuer: String,
    http: reqwest::Client,
    cache: ArcSwap<KeySet>,
    refresher: tokio::sync::Mutex<Refresher>,
}

/// The keys as last fetched.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<PublicKey>,
    fetched: Option<Instant>,
    /// Counts fetches, so a request that waited for another's refresh does not fetch again.
    generation: u64,
}

struct PublicKey {
    jwk: Jwk,
    key: DecodingKey,
}

#[derive(Default)]
struct Refresher {
    jwks_uri: Option<String>,
    last_attempt: Option<Instant>,
}

impl IssuerKeys {
    pub fn new(issuer: &str) -> Result<IssuerKeys, OAuthError> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(crate::same_origin_redirects())
            .build()
            .map_err(|e| OAuthError::Unreachable(format!("cannot build the HTTP client: {e}")))?;
        Ok(IssuerKeys {
            issuer: issuer.to_owned(),
            http,
            cache: ArcSwap::default(),
            refresher: tokio::sync::Mutex::default(),
        })
    }

    /// Keys already known (an issuer whose keys are given rather than fetched: tests).
    pub fn with_jwks(issuer: &str, jwks: &Value) -> Result<IssuerKeys, OAuthError> {
        let keys = IssuerKeys::new(issuer)?;
        keys.cache.store(Arc::new(KeySet::parse(jwks, 1)));
        Ok(keys)
    }

    /// The key set to verify a token with `kid` and `alg`, fetched again first when it holds no
    /// such key or is old (and the cooldown allows). `Err` when, even then, no key fits.
    pub async fn for_token(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<KeySet>, JwtError> {
        let set = self.cache.load_full();
        let fresh = set.fetched.is_some_and(|at| at.elapsed() < MAX_AGE);
        if fresh && set.matching(kid, alg).next().is_some() {
            return Ok(set);
        }
        if let Err(why) = self.refresh(set.generation).await {
            tracing::warn!("{why}");
        }
        let set = self.cache.load_full();
        if set.matching(kid, alg).next().is_some() {
            return Ok(set);
        }
        Err(match kid {
            _ if set.generation == 0 => JwtError::KeysNotLoaded,
            Some(kid) => JwtError::UnknownKey {
                kid: kid.to_owned(),
                alg,
            },
            None => JwtError::NoKey(alg),
        })
    }

    /// Fetches the keys unless another request did since `seen` or the cooldown forbids.
    pub async fn refresh(&self, seen: u64) -> Result<(), IssuerError> {
        let mut refresher = self.refresher.lock().await;
        if self.cache.load().generation != seen {
            return Ok(());
        }
        if refresher
            .last_attempt
            .is_some_and(|at| at.elapsed() < REFRESH_COOLDOWN)
        {
            return Ok(());
        }
        refresher.last_attempt = Some(Instant::now());
        let fetched = self.fetch(&mut refresher).await;
        let jwks = fetched.map_err(|why| IssuerError::Keys {
            issuer: self.issuer.clone(),
            error: Box::new(why),
        })?;
        let set = KeySet::parse(&jwks, seen + 1);
        tracing::info!(
            "auth: {} signing key(s) of issuer {} loaded",
            set.keys.len(),
            self.issuer
        );
        self.cache.store(Arc::new(set));
        Ok(())
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The number of the key set in use (each fetch makes a new one).
    pub fn generation(&self) -> u64 {
        self.cache.load().generation
    }

    async fn fetch(&self, refresher: &mut Refresher) -> Result<Value, IssuerError> {
        let uri = match &refresher.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                refresher.jwks_uri = Some(uri.clone());
                uri
            }
        };
        self.get_json(&uri).await
    }

    /// `jwks_uri` from the issuer's metadata: RFC 8414 first, then OpenID Connect discovery (an
    /// RFC 8414 document may leave `jwks_uri` out; OpenID's may not).
    async fn discover(&self) -> Result<String, IssuerError> {
        let metadata = self.metadata(&["jwks_uri"]).await?;
        metadata
            .get("jwks_uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(IssuerError::NoJwksUri)
    }

    /// The first of the issuer's metadata documents (RFC 8414, then OpenID Connect discovery)
    /// that names this issuer and has every field of `needed`. A document that names another
    /// issuer is not this issuer's (RFC 8414 §3.3).
    pub async fn metadata(&self, needed: &[&str]) -> Result<Value, IssuerError> {
        let mut failures = Vec::new();
        let issuer = Url::parse(&self.issuer).map_err(|e| IssuerError::NotAUrl {
            issuer: self.issuer.clone(),
            reason: e.to_string(),
        })?;
        for url in server_metadata_urls(&issuer) {
            let url = url.to_string();
            let metadata = match self.get_json(&url).await {
                Ok(metadata) => metadata,
                Err(why) => {
                    failures.push(why.to_string());
                    continue;
                }
            };
            let named = metadata.get("issuer").and_then(Value::as_str);
            if !named.is_some_and(|named| same_issuer(named, &self.issuer)) {
                failures.push(format!("{url}: names issuer {named:?}, not this one"));
                continue;
            }
            match needed
                .iter()
                .find(|field| metadata.get(**field).and_then(Value::as_str).is_none())
            {
                None => return Ok(metadata),
                Some(missing) => failures.push(format!("{url}: no {missing}")),
            }
        }
        Err(IssuerError::NoMetadata {
            issuer: self.issuer.clone(),
            failures,
        })
    }

    async fn get_json(&self, url: &str) -> Result<Value, IssuerError> {
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| IssuerError::Unreachable {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(IssuerError::Status {
                url: url.to_owned(),
                status,
            });
        }
        let body = crate::read_capped(response)
            .await
            .map_err(|error| IssuerError::Body {
                url: url.to_owned(),
                error,
            })?;
        serde_json::from_slice(&body).map_err(|e| IssuerError::NotJson {
            url: url.to_owned(),
            reason: e.to_string(),
        })
    }
}

impl KeySet {
    /// The usable signing keys of a JWK set; other keys (encryption keys, unknown types, HMAC
    /// secrets, broken ones) are left out one by one, never failing the whole set.
    fn parse(jwks: &Value, generation: u64) -> KeySet {
        let entries = jwks.get("keys").and_then(Value::as_array);
        let keys = entries
            .into_iter()
            .flatten()
            .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
            .filter(|jwk| jwk.common.public_key_use != Some(PublicKeyUse::Encryption))
            .filter(|jwk| SIGNING.iter().any(|alg| fits(jwk, *alg)))
            .filter_map(|jwk| {
                let key = DecodingKey::from_jwk(&jwk).ok()?;
                Some(PublicKey { jwk, key })
            })
            .collect();
        KeySet {
            keys,
            fetched: Some(Instant::now()),
            generation,
        }
    }

    /// The keys that may have signed a token with `kid` and `alg`: the key's type must be the
    /// algorithm's (an RSA key never checks an HMAC or an EC signature) and its own `alg`, when
    /// it names one, must be this one.
    pub fn matching<'s>(
        &'s self,
        kid: Option<&'s str>,
        alg: Algorithm,
    ) -> impl Iterator<Item = &'s DecodingKey> {
        self.keys
            .iter()
            .filter(move |k| kid.is_none() || k.jwk.common.key_id.as_deref() == kid)
            .filter(move |k| fits(&k.jwk, alg))
            .map(|k| &k.key)
    }
}

/// The asymmetric algorithms jsonwebtoken verifies.
const SIGNING: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    use Algorithm::*;
    let type_fits = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
        AlgorithmParameters::EllipticCurve(ec) => matches!(
            (&ec.curve, alg),
            (EllipticCurve::P256, ES256) | (EllipticCurve::P384, ES384)
        ),
        AlgorithmParameters::OctetKeyPair(okp) => {
            okp.curve == EllipticCurve::Ed25519 && alg == EdDSA
        }
        AlgorithmParameters::OctetKey(_) => false,
    };
    // Both enums name the JOSE algorithms alike (`RS256`, `EdDSA`).
    let named_fits = jwk
        .common
        .key_algorithm
        .is_none_or(|named| format!("{named:?}") == format!("{alg:?}"));
    type_fits && named_fits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_keys_are_left_out_one_by_one() {
        let jwks = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "EC", "crv": "P-521", "kid": "big", "x": "AA", "y": "AA"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "RSA", "kid": "rsa", "alg": "RS256", "n": "AQAB", "e": "AQAB"},
            {"kty": "whatever"},
        ]});
        let set = KeySet::parse(&jwks, 1);
        assert_eq!(set.keys.len(), 1);
        assert_eq!(set.matching(Some("rsa"), Algorithm::RS256).count(), 1);
        assert_eq!(set.matching(None, Algorithm::RS256).count(), 1);
        assert_eq!(
            set.matching(Some("rsa"), Algorithm::RS384).count(),
            0,
            "the key says RS256"
        );
        assert_eq!(
            set.matching(Some("rsa"), Algorithm::ES256).count(),
            0,
            "an RSA key"
        );
        assert_eq!(set.matching(Some("secret"), Algorithm::HS256).count(), 0);
    }
}
