//! Secrets on a stdio server's command line, and in the variables it inherits: many servers
//! take their credential as a flag (`--api-key sk-…`, `--token=ghp_…`, mcp-remote's
//! `--header "Authorization: Bearer …"`), and configs copied from their READMEs keep it there.
//! Such a value is hidden wherever the server's configured secrets are (the config view, its
//! stderr, its errors), as an `env` value is. The same words decide which members of a tool
//! call's arguments the audit log keeps out ([`without_secret_values`]).

/// Words that say a name's value is a credential, matched at the end of the name's last
/// segment (split at `-`, `_` and `.`): `--api-key`, `--apikey`, `GITHUB_TOKEN`, but not
/// `--keyboard`, `--max-tokens`, `--author`, `--api-key-file` or `--auth-type`.
const SECRET_WORDS: &[&str] = &[
    "key",
    "keys",
    "secrets",
    "headers",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "auth",
    "credential",
    "credentials",
    "bearer",
    "cookie",
    "connstr",
];

/// Short words that name a credential only as the whole last segment (`--pat`, `DB_PWD`), not
/// as its end (`--compat`).
const SECRET_SEGMENTS: &[&str] = &["pwd", "pass", "pat", "jwt", "dsn", "pin"];

/// Last parts that qualify the part before them rather than name a thing of their own:
/// `SECRET_KEY_BASE`, `API_KEY_2`, `STRIPE_SECRET_KEY_LIVE`, `--secret-string`.
const QUALIFIERS: &[&str] = &["base", "string", "value", "live", "test", "prod", "config"];

/// Names that end like a credential's but are none: the working directory.
const NOT_SECRETS: &[&str] = &["pwd", "oldpwd"];

/// Headers whose value is a credential, whatever their name says.
const SECRET_HEADERS: &[&str] = &["authorization", "proxy-authorization", "cookie"];

/// Whether a flag or variable named `name` (`--api-key`, `GITHUB_TOKEN`) holds a credential.
pub fn names_a_secret(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    if NOT_SECRETS.contains(&name.as_str()) {
        return false;
    }
    let joined: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut parts = name.rsplit(['-', '_', '.']).filter(|part| !part.is_empty());
    let last = parts.next().unwrap_or_default();
    let names = |part: &str| {
        SECRET_SEGMENTS.contains(&part) || SECRET_WORDS.iter().any(|word| part.ends_with(word))
    };
    let qualified = last.chars().all(|c| c.is_ascii_digit()) || QUALIFIERS.contains(&last);
    joined.ends_with("connectionstring")
        || (last.starts_with("header") && joined.contains("auth"))
        || names(last)
        || (qualified && parts.next().is_some_and(names))
}

/// Values no credential has: a boolean, a word meaning none.
fn plainly_no_secret(value: &str) -> bool {
    ["true", "false", "none", "null", "yes", "no", "on", "off"]
        .contains(&value.to_ascii_lowercase().as_str())
}

/// The credential in a header given as `Name: value`, when the header carries one.
fn header_secret(header: &str) -> Option<&str> {
    let (name, value) = header.split_once(':')?;
    let name = name.trim().to_ascii_lowercase();
    (SECRET_HEADERS.contains(&name.as_str()) || names_a_secret(&name)).then(|| value.trim())
}

/// The values `args` gives to flags (or `NAME=value` assignments) named like credentials,
/// and the credentials of `--header`/`-H` values: `--api-key VALUE`, `--token=VALUE`,
/// `API_KEY=VALUE`, `--header "Authorization: Bearer VALUE"`.
pub(crate) fn secret_args(args: &[String]) -> Vec<&str> {
    let mut secrets = Vec::new();
    let (mut value_is_secret, mut value_is_header) = (false, false);
    for arg in args {
        let (secret, header) = (
            std::mem::take(&mut value_is_secret),
            std::mem::take(&mut value_is_header),
        );
        if header {
            secrets.extend(header_secret(arg));
            continue;
        }
        if secret && !arg.starts_with('-') {
            secrets.push(arg.as_str());
            continue;
        }
        if !arg.starts_with('-') {
            if let Some((name, value)) = arg.split_once('=')
                && names_a_secret(name)
            {
                secrets.push(value);
            }
            continue;
        }
        match arg.split_once('=') {
            Some((flag, value)) if is_header_flag(flag) => secrets.extend(header_secret(value)),
            Some((flag, value)) if names_a_secret(flag) => secrets.push(value),
            Some(_) => {}
            None if is_header_flag(arg) => value_is_header = true,
            None => value_is_secret = names_a_secret(arg),
        }
    }
    secrets.retain(|value| !plainly_no_secret(value));
    secrets
}

fn is_header_flag(flag: &str) -> bool {
    matches!(flag, "--header" | "-H" | "--headers")
}

/// `value` with the value of every member whose name says it holds a credential
/// ([`names_a_secret`]: `password`, `api_key`, `apiKey`, `Authorization`) replaced by
/// `[redacted]`, at any depth: tool arguments as the audit log keeps them.
pub fn without_secret_values(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                if names_a_secret(name)
                    || SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str())
                {
                    *member = serde_json::Value::from(crate::redact::REDACTED);
                } else {
                    without_secret_values(member);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_secret_values),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{names_a_secret, secret_args};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn argument_members_named_like_credentials_lose_their_values() {
        let mut arguments = serde_json::json!({
            "query": "weather",
            "password": "hunter2",
            "apiKey": "k-1",
            "nested": {"Authorization": "Bearer t", "tokens": 3, "items": [{"api_key": "k-2"}]},
            "max_tokens": 100
        });
        super::without_secret_values(&mut arguments);
        assert_eq!(
            arguments,
            serde_json::json!({
                "query": "weather",
                "password": "[redacted]",
                "apiKey": "[redacted]",
                "nested": {"Authorization": "[redacted]", "tokens": 3, "items": [{"api_key": "[redacted]"}]},
                "max_tokens": 100
            })
        );
    }

    #[test]
    fn values_of_flags_named_like_credentials_are_secrets() {
        let given = args(&[
            "-y",
            "@smithery/cli",
            "run",
            "--api-key",
            "sk-live-1",
            "--github-token=ghp_2",
            "AUTH_HEADER=Bearer x3",
            "--header",
            "Authorization: Bearer hdr-4",
            "--header=X-Api-Key: hdr-5",
            "-H",
            "Accept: text/plain",
            "--port",
            "8080",
            "--session",
            "--verbose",
            "/data/keys.txt",
            "--auth-type",
            "oauth2",
            "--auth",
            "none",
            "--connection-string",
            "Server=db;Password=p6",
            "--pin",
            "123456",
        ]);
        assert_eq!(
            secret_args(&given),
            [
                "sk-live-1",
                "ghp_2",
                "Bearer x3",
                "Bearer hdr-4",
                "hdr-5",
                "Server=db;Password=p6",
                "123456"
            ],
            "a flag followed by another flag gives it nothing; a path is only a path; 'none' is none"
        );
        assert!(secret_args(&args(&["--name", "x", "run", "key"])).is_empty());
    }

    #[test]
    fn a_name_is_a_credentials_by_a_segments_end() {
        for secret in [
            "--api-key",
            "--apikey",
            "GITHUB_TOKEN",
            "--access-token",
            "--client-secret",
            "--pat",
            "DATABASE_PASSWORD",
            "--dsn",
            "AZURE_STORAGE_CONNECTION_STRING",
            "SECRET_KEY_BASE",
            "API_KEY_2",
            "STRIPE_SECRET_KEY_LIVE",
            "--secret-string",
            "DOCKER_AUTH_CONFIG",
            "DB_PASS",
            "OPENAI_API_KEYS",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ] {
            assert!(names_a_secret(secret), "{secret}");
        }
        for plain in [
            "--keyboard",
            "--max-tokens",
            "--author",
            "--tokenizer",
            "--port",
            "PATH",
            "PWD",
            "OLDPWD",
            "--compat",
            "--api-key-file",
            "--auth-type",
            "SSH_AUTH_SOCK",
            "XDG_SESSION_TYPE",
            "DESKTOP_SESSION",
        ] {
            assert!(!names_a_secret(plain), "{plain}");
        }
    }
}
