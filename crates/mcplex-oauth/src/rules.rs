//! The `auth.rules`: a verified access token's claims → the scope it reaches, exactly as an agent
//! token's (servers × permissions, narrowed by a profile). The first rule the token matches
//! decides; a token that matches none reaches nothing (`None`), never everything.

use std::collections::{BTreeSet, HashMap};

use mcplex_config::{AuthRule, Profile, RuleMatch};
use mcplex_trust::{Permission, Permissions, Scope};
use serde_json::{Map, Value};

pub struct Rules {
    rules: Vec<AuthRule>,
    profiles: HashMap<String, BTreeSet<String>>,
}

impl Rules {
    pub fn new(rules: &[AuthRule], profiles: &[Profile]) -> Rules {
        Rules {
            rules: rules.to_vec(),
            profiles: profiles
                .iter()
                .map(|p| (p.name.clone(), p.servers.clone()))
                .collect(),
        }
    }

    /// What a token with these claims reaches; `None` when no rule matches it.
    pub fn grant(&self, claims: &Map<String, Value>) -> Option<Scope> {
        let rule = self.rules.iter().find(|rule| matches(&rule.when, claims))?;
        let permissions = rule
            .permissions
            .iter()
            .filter_map(|name| Permission::parse(name))
            .fold(Permissions::default(), Permissions::with);
        if permissions.is_empty() {
            return None;
        }
        let scope = Scope::new(rule.servers.clone(), permissions);
        Some(match &rule.profile {
            // A profile that no longer exists leaves the token with nothing, never everything.
            Some(profile) => scope.within(self.profiles.get(profile).unwrap_or(&BTreeSet::new())),
            None => scope,
        })
    }
}

fn matches(when: &RuleMatch, claims: &Map<String, Value>) -> bool {
    match when {
        RuleMatch::Scope(wanted) => token_scopes(claims).any(|scope| scope == wanted),
        RuleMatch::Claim { name, value } => claim(claims, name).is_some_and(|c| holds(c, value)),
    }
}

/// The token's scopes: `scope` (RFC 9068, space-separated) and `scp` (an array, or a string).
fn token_scopes(claims: &Map<String, Value>) -> impl Iterator<Item = &str> {
    ["scope", "scp"]
        .into_iter()
        .filter_map(|name| claims.get(name))
        .flat_map(words)
}

/// A space-separated string's words, or an array's strings.
fn words(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => text.split_whitespace().collect(),
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A claim by its exact name (namespaced claims are URLs, dots included), else by a dotted path
/// into nested objects (`realm_access.roles`).
fn claim<'c>(claims: &'c Map<String, Value>, name: &str) -> Option<&'c Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A claim is the value, or an array that holds it. Booleans and numbers compare as written.
fn holds(claim: &Value, wanted: &str) -> bool {
    match claim {
        Value::String(text) => text == wanted,
        Value::Array(items) => items.iter().any(|item| holds(item, wanted)),
        Value::Bool(flag) => wanted.parse::<bool>() == Ok(*flag),
        Value::Number(number) => wanted
            .parse::<serde_json::Number>()
            .is_ok_and(|w| w == *number),
        Value::Null | Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(when: RuleMatch, servers: Option<&[&str]>, permissions: &[&str]) -> AuthRule {
        AuthRule {
            when,
            servers: servers.map(|s| s.iter().map(|n| (*n).to_owned()).collect()),
            permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
            profile: None,
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn rules() -> Rules {
        let mut pinned = rule(
            RuleMatch::Claim {
                name: "realm_access.roles".into(),
                value: "coder".into(),
            },
            None,
            &["read", "write"],
        );
        pinned.profile = Some("code".into());
        Rules::new(
            &[
                rule(
                    RuleMatch::Claim {
                        name: "https://example.com/groups".into(),
                        value: "ops".into(),
                    },
                    None,
                    &["read", "write", "destructive"],
                ),
                rule(
                    RuleMatch::Scope("mcp:write".into()),
                    Some(&["fs"]),
                    &["read", "write"],
                ),
                rule(RuleMatch::Scope("mcp:read".into()), None, &["read"]),
                pinned,
            ],
            &[Profile {
                name: "code".into(),
                servers: ["git".to_owned()].into(),
            }],
        )
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let rules = rules();
        let both = rules
            .grant(&claims(json!({"scope": "mcp:read mcp:write"})))
            .expect("a rule matches");
        assert!(both.admits("fs", Permission::Write));
        assert!(
            !both.admits("git", Permission::Read),
            "rule 2 decides, not a union"
        );
        let read = rules
            .grant(&claims(json!({"scp": ["mcp:read"]})))
            .expect("a rule matches");
        assert!(read.admits("git", Permission::Read));
        assert!(!read.admits("git", Permission::Write));
        let ops = rules
            .grant(&claims(
                json!({"https://example.com/groups": ["dev", "ops"]}),
            ))
            .expect("the namespaced claim matches");
        assert!(ops.is_full());
    }

    #[test]
    fn a_nested_claim_and_a_profile_narrow_the_grant() {
        let coder = rules()
            .grant(&claims(json!({"realm_access": {"roles": ["coder"]}})))
            .expect("the nested claim matches");
        assert!(coder.admits("git", Permission::Write));
        assert!(!coder.admits("fs", Permission::Read), "outside the profile");
    }

    #[test]
    fn a_token_that_matches_no_rule_reaches_nothing() {
        let rules = rules();
        for unmatched in [
            json!({}),
            json!({"scope": "mcp:readx openid"}),
            json!({"scope": "MCP:READ"}),
            json!({"https://example.com/groups": "dev"}),
            json!({"https://example.com/groups": {"ops": true}}),
            json!({"realm_access": "coder"}),
            json!({"https://example.com/groups": true}),
        ] {
            assert_eq!(rules.grant(&claims(unmatched.clone())), None, "{unmatched}");
        }
    }
}
