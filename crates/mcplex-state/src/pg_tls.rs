//! TLS to PostgreSQL, with the meanings libpq gives `sslmode` and `sslrootcert`, so that a
//! `DATABASE_URL` copied from another tool means the same here.
//!
//! Owns: reading those two parameters out of a `postgres://` URL (the driver knows neither
//! `verify-ca`, `verify-full` nor `sslrootcert`), and the rustls client each mode needs:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | – |
//! | `allow`, `prefer` (the default) | when the server offers it | not checked (as libpq) |
//! | `require` | always | not checked; chain checked when `sslrootcert` is given (as libpq) |
//! | `verify-ca` | always | chain checked against the roots |
//! | `verify-full` | always | chain and host name checked |
//!
//! The roots are the PEM file `sslrootcert` names, or the system's store (`sslrootcert=system`
//! or no `sslrootcert`). Channel binding (SCRAM-SHA-256-PLUS) comes with the TLS connector.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StateError;

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// How to reach a PostgreSQL server: the driver's settings and the TLS connector, if any.
#[derive(Clone)]
pub(crate) struct PgTarget {
    pub(crate) config: postgres::Config,
    tls: Option<MakeRustlsConnect>,
}

impl PgTarget {
    /// Reads `url`, its `sslmode` and `sslrootcert` included. Errors never repeat the URL (it may
    /// hold a password).
    pub(crate) fn parse(url: &str) -> Result<PgTarget, StateError> {
        let (rest, mode, root_cert) = take_tls_parameters(url)?;
        let mut config: postgres::Config = rest
            .parse()
            .map_err(|e: postgres::Error| StateError::Store(e.to_string()))?;
        crate::pg_session::bound_socket(&mut config, &query_keys(&rest));
        config.ssl_mode(match mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        });
        let tls = match mode {
            SslMode::Disable => None,
            mode => Some(MakeRustlsConnect::new(client_config(mode, root_cert)?)),
        };
        Ok(PgTarget { config, tls })
    }

    /// Opens a connection (blocking: not on an async worker), its session bounded
    /// (`pg_session.rs`).
    pub(crate) fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        let mut client = match &self.tls {
            Some(tls) => self.config.connect(tls.clone())?,
            None => self.config.connect(postgres::NoTls)?,
        };
        crate::pg_session::bound_session(&mut client)?;
        Ok(client)
    }
}

/// `url` without `sslmode` and `sslrootcert` (the driver refuses what it does not know), the
/// mode, and the roots file.
fn take_tls_parameters(url: &str) -> Result<(String, SslMode, Option<PathBuf>), StateError> {
    let mut mode = SslMode::Prefer;
    let mut root_cert = None;
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), mode, root_cert));
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        // Keys decoded as the driver decodes them: `ssl%6Dode=require` is an `sslmode` it
        // would read with its own meaning (`require` without a certificate check), so it is
        // ours to read, not the driver's.
        match percent_decode(key).as_str() {
            "sslmode" => mode = ssl_mode(&percent_decode(value))?,
            "sslrootcert" => root_cert = Some(PathBuf::from(percent_decode(value))),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, mode, root_cert))
}

/// The parameter names of `url`'s query, percent-decoded as the driver reads them.
fn query_keys(url: &str) -> Vec<String> {
    let query = url.split_once('?').map_or("", |(_, query)| query);
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| percent_decode(pair.split_once('=').map_or(pair, |(key, _)| key)))
        .collect()
}

fn ssl_mode(value: &str) -> Result<SslMode, StateError> {
    Ok(match value {
        "disable" => SslMode::Disable,
        "allow" | "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        other => {
            return Err(StateError::Store(format!(
                "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, \
                 verify-full"
            )));
        }
    })
}

/// `%XX` escapes decoded (a path in a URL may carry them); anything malformed is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn client_config(mode: SslMode, root_cert: Option<PathBuf>) -> Result<ClientConfig, StateError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StateError::Store(format!("TLS to PostgreSQL: {e}")))?;
    let checks_chain = match mode {
        SslMode::Disable | SslMode::Prefer => false,
        SslMode::Require => root_cert.is_some(),
        SslMode::VerifyCa | SslMode::VerifyFull => true,
    };
    let chain = if checks_chain {
        let roots = Arc::new(roots(root_cert)?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| StateError::Store(format!("TLS to PostgreSQL: {e}")))?;
        Some(webpki)
    } else {
        None
    };
    let verifier = Arc::new(ServerCheck {
        chain,
        name: mode == SslMode::VerifyFull,
        algorithms: provider.signature_verification_algorithms,
    });
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The roots a chain is checked against: the PEM file, or the system's store.
fn roots(root_cert: Option<PathBuf>) -> Result<RootCertStore, StateError> {
    let mut roots = RootCertStore::empty();
    match root_cert.filter(|path| path.as_os_str() != "system") {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(&path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| StateError::Store(format!("sslrootcert {}: {e}", path.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(StateError::Store(format!(
                    "sslrootcert {}: no certificate in it",
                    path.display()
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(StateError::Store(
                    "TLS to PostgreSQL: the system has no root certificates; name a file with \
                     sslrootcert"
                        .into(),
                ));
            }
        }
    }
    Ok(roots)
}

/// What is checked of the server's certificate: its chain (`verify-ca`, `verify-full`, or
/// `require` with roots), and its name (`verify-full`). With no chain to check (`prefer`,
/// `require` without roots), as libpq: encrypted, the certificate taken as sent. The handshake's
/// signatures are checked in every mode.
#[derive(Debug)]
struct ServerCheck {
    chain: Option<Arc<WebPkiServerVerifier>>,
    name: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ServerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            checked => checked,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_and_the_rest_is_kept() {
        let ca = || Some(PathBuf::from("/etc/ca.pem"));
        // (URL, what the driver is given, the mode, the roots file)
        let cases = [
            (
                "postgres://u:p@db:5432/app?sslmode=verify-full&connect_timeout=3&sslrootcert=%2Fetc%2Fca.pem",
                "postgres://u:p@db:5432/app?connect_timeout=3",
                SslMode::VerifyFull,
                ca(),
            ),
            (
                "postgres://db/app",
                "postgres://db/app",
                SslMode::Prefer,
                None,
            ),
            (
                "postgres://db/app?sslmode=disable",
                "postgres://db/app",
                SslMode::Disable,
                None,
            ),
            // A key written with escapes is the same key.
            (
                "postgres://db/app?ssl%6Dode=verify-full&%73slrootcert=%2Fetc%2Fca.pem&application_name=x",
                "postgres://db/app?application_name=x",
                SslMode::VerifyFull,
                ca(),
            ),
        ];
        for (url, rest, mode, root) in cases {
            let taken = take_tls_parameters(url).expect("parse");
            assert_eq!(taken, (rest.to_owned(), mode, root), "{url}");
        }
    }

    #[test]
    fn an_unknown_mode_is_named_and_the_url_is_not_repeated() {
        let Err(StateError::Store(message)) =
            PgTarget::parse("postgres://u:secret-pw@db/app?sslmode=verify-everything")
        else {
            panic!("an unknown sslmode must be refused");
        };
        assert!(message.contains("verify-everything"), "{message}");
        assert!(!message.contains("secret-pw"), "{message}");
    }

    #[test]
    fn a_roots_file_that_is_missing_or_empty_is_refused_with_its_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").expect("write");
        for path in [dir.path().join("missing.pem"), empty] {
            let url = format!(
                "postgres://db/app?sslmode=verify-ca&sslrootcert={}",
                path.display()
            );
            let Err(StateError::Store(message)) = PgTarget::parse(&url) else {
                panic!("{} must be refused", path.display());
            };
            assert!(message.contains(&path.display().to_string()), "{message}");
        }
    }

    /// On the test server (`MCPLEX_TEST_POSTGRES`, speaking TLS with a certificate for
    /// "localhost" from the CA `MCPLEX_TEST_POSTGRES_CA` names; `scripts/test.sh` sets both),
    /// each mode connects, encrypts and checks as libpq's does.
    #[test]
    fn each_mode_connects_encrypts_and_checks_as_libpq_does() {
        let (Ok(server), Ok(ca)) = (
            std::env::var("MCPLEX_TEST_POSTGRES"),
            std::env::var("MCPLEX_TEST_POSTGRES_CA"),
        ) else {
            let in_ci = std::env::var("CI").is_ok_and(|ci| ci == "true" || ci == "1");
            assert!(
                !in_ci,
                "CI=true and no PostgreSQL with TLS to test on (MCPLEX_TEST_POSTGRES and MCPLEX_TEST_POSTGRES_CA, set by scripts/test.sh)"
            );
            eprintln!("no PostgreSQL with TLS to test on (MCPLEX_TEST_POSTGRES_CA unset)");
            return;
        };
        let by_ip = format!("{}/postgres", server.trim_end_matches('/'));
        assert!(
            by_ip.contains("@127.0.0.1:"),
            "the test server is on 127.0.0.1"
        );
        let by_name = by_ip.replace("@127.0.0.1:", "@localhost:");
        let encrypted = |url: String| -> Result<bool, String> {
            let target = PgTarget::parse(&url).map_err(|e| e.to_string())?;
            let mut client = target.connect().map_err(|e| format!("{e:?}"))?;
            let row = client
                .query_one(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .map_err(|e| e.to_string())?;
            Ok(row.get(0))
        };
        assert_eq!(encrypted(by_ip.clone()), Ok(true), "prefer, the default");
        assert_eq!(encrypted(format!("{by_ip}?sslmode=disable")), Ok(false));
        assert_eq!(encrypted(format!("{by_ip}?sslmode=require")), Ok(true));
        let verify =
            |url: &str, mode: &str| encrypted(format!("{url}?sslmode={mode}&sslrootcert={ca}"));
        assert_eq!(verify(&by_name, "verify-full"), Ok(true));
        assert_eq!(
            verify(&by_ip, "verify-ca"),
            Ok(true),
            "verify-ca compares no name"
        );
        let wrong_name =
            verify(&by_ip, "verify-full").expect_err("the certificate is for localhost");
        assert!(wrong_name.contains("NotValidForName"), "{wrong_name}");
        // Roots that did not sign the server's certificate: the system's, or none at all.
        let unknown = encrypted(format!("{by_name}?sslmode=verify-full&sslrootcert=system"))
            .expect_err("a throwaway CA is in no system store");
        assert!(
            unknown.contains("UnknownIssuer") || unknown.contains("no root certificates"),
            "{unknown}"
        );
    }

    #[test]
    fn percent_escapes_are_decoded_and_malformed_ones_kept() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
