//! Secrets on a stdio server's command line: many servers take their credential as a flag
//! (`--api-key sk-…`, `--token=ghp_…`), and configs copied from their READMEs keep it there. Such
//! a value is hidden wherever the server's configured secrets are (the config view, its stderr,
//! its errors), as an `env` value is.

/// Words in a flag's or an assignment's name that say its value is a credential.
const SECRET_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "credential",
    "bearer",
    "cookie",
    "session",
];

/// Whether a flag or variable named `name` (`--api-key`, `GITHUB_TOKEN`) holds a credential.
fn names_a_secret(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    !name.is_empty() && SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// The values `args` gives to flags (or `NAME=value` assignments) named like credentials:
/// `--api-key VALUE`, `--token=VALUE`, `API_KEY=VALUE`.
pub(crate) fn secret_args(args: &[String]) -> Vec<&str> {
    let mut secrets = Vec::new();
    let mut next_is_secret = false;
    for arg in args {
        if std::mem::take(&mut next_is_secret) && !arg.starts_with('-') {
            secrets.push(arg.as_str());
            continue;
        }
        match arg.split_once('=') {
            Some((name, value)) if names_a_secret(name) => secrets.push(value),
            Some(_) => {}
            None => next_is_secret = arg.starts_with('-') && names_a_secret(arg),
        }
    }
    secrets
}

#[cfg(test)]
mod tests {
    use super::secret_args;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
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
            "--port",
            "8080",
            "--session",
            "--verbose",
            "/data/keys.txt",
        ]);
        assert_eq!(
            secret_args(&given),
            ["sk-live-1", "ghp_2", "Bearer x3"],
            "a flag followed by another flag gives it nothing; a path is only a path"
        );
        assert!(secret_args(&args(&["--name", "x", "run", "key"])).is_empty());
    }
}
