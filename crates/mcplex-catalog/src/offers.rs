//! Prompts, resources and resource templates, aggregated over the servers like tools are.
//!
//! Names are namespaced reversibly, and resolved through tables built here, never by parsing
//! a name apart:
//! - a prompt is listed as `server__prompt` (the tools' registration scheme, hashed when too
//!   long or colliding);
//! - a resource URI or URI template is listed as `mcplex://<server>/<original>`, where `<server>`
//!   is the configured name percent-encoded (so it never contains `/` or `{`) and `<original>` is
//!   the upstream's URI, verbatim. Stripping the prefix gives the original back exactly, and a
//!   template stays a template.
//!
//! A server with `"namespace": false` keeps its own prompt names and URIs; a name or URI that
//! another server already holds is refused with a diagnostic naming both (the server whose name
//! sorts first keeps it, as for tools).
//!
//! Prompts and resources need the `read` permission of a token's scope (they change nothing).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcplex_config::ServerConfig;
use mcplex_names::{NameConflict, NameHolder, RegistrationTable, ToolId};
use mcplex_trust::{Permission, Scope};
use serde_json::Value;

use crate::{Diagnostic, Route};

/// The scheme of a namespaced resource URI: `mcplex://<server>/<original URI>`.
pub const NAMESPACED_URI_PREFIX: &str = "mcplex://";

/// A prompt as served: its upstream and the listing entry with the served name.
#[derive(Debug, Clone)]
pub struct OfferedPrompt {
    pub(crate) server: Arc<str>,
    /// The upstream's own name for it.
    pub original: String,
    /// The upstream's prompt object with `name` replaced by the served name.
    pub listed: Value,
}

/// A resource or resource template as served.
#[derive(Debug, Clone)]
pub struct OfferedResource {
    pub(crate) server: Arc<str>,
    /// The upstream's own URI (or URI template).
    pub original: String,
    /// The upstream's object with `uri` (or `uriTemplate`) replaced by the served one.
    pub listed: Value,
}

/// What a served server can do besides tools, from its declared capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerFeatures {
    /// `"namespace": false`.
    pub transparent: bool,
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
    pub completions: bool,
    pub logging: bool,
}

/// Every served prompt, resource and template of one snapshot.
#[derive(Debug, Default)]
pub struct Offers {
    /// Sorted by served name.
    prompts: Vec<OfferedPrompt>,
    prompt_index: HashMap<String, usize>,
    /// In the order of their servers' names, then upstream order.
    resources: Vec<OfferedResource>,
    resource_index: HashMap<String, usize>,
    templates: Vec<OfferedResource>,
    template_index: HashMap<String, usize>,
    /// Servers whose offers are served (connected at least once, not quarantined), by name.
    features: BTreeMap<Arc<str>, ServerFeatures>,
}

impl OfferedPrompt {
    /// The upstream that serves it.
    pub fn route(&self) -> Route {
        Route::to(&self.server)
    }
}

impl OfferedResource {
    /// The upstream that serves it.
    pub fn route(&self) -> Route {
        Route::to(&self.server)
    }
}

/// A request target: the upstream and the name or URI in its own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub route: Route,
    pub original: String,
}

/// One server's contribution to a build, after quarantine and approvals.
pub(crate) struct ServerOffer<'a> {
    pub config: &'a ServerConfig,
    pub capabilities: &'a Value,
    /// Prompts that passed the filter and approvals.
    pub prompts: Vec<&'a serde_json::Map<String, Value>>,
    pub resources: &'a [Value],
    pub templates: &'a [Value],
}

fn declares(capabilities: &Value, name: &str) -> bool {
    capabilities.get(name).is_some_and(Value::is_object)
}

/// Builds the offers of `servers`. Resources are listed, and clashes decided, in the order of
/// the servers' names (as for tools): the same servers give the same answer whatever the
/// config's order.
pub(crate) fn build(
    mut servers: Vec<ServerOffer<'_>>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Offers {
    servers.sort_by(|a, b| a.config.name.cmp(&b.config.name));
    let mut offers = Offers::default();
    add_prompts(&mut offers, &servers, diagnostics);
    for server in &servers {
        let name: Arc<str> = server.config.name.as_str().into();
        offers.features.insert(name.clone(), features(server));
        let mut resources = Resources {
            offers: &mut offers,
            diagnostics: &mut *diagnostics,
            server,
            name: &name,
        };
        resources.add(server.resources, "uri", false);
        resources.add(server.templates, "uriTemplate", true);
    }
    offers
}

/// Names the servers' prompts by the tools' naming scheme (transparent servers keep their own
/// names) and lists them, sorted by served name.
fn add_prompts(
    offers: &mut Offers,
    servers: &[ServerOffer<'_>],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let transparent: HashMap<&str, bool> = servers
        .iter()
        .map(|s| (s.config.name.as_str(), !s.config.namespace))
        .collect();
    let mut raw_prompts: HashMap<ToolId, &serde_json::Map<String, Value>> = HashMap::new();
    for server in servers {
        for prompt in &server.prompts {
            if let Some(name) = prompt.get("name").and_then(Value::as_str) {
                raw_prompts.insert(ToolId::new(server.config.name.as_str(), name), prompt);
            }
        }
    }
    let (table, conflicts) = RegistrationTable::build_with(
        raw_prompts.keys().cloned(),
        |id| transparent.get(&*id.server).copied().unwrap_or(false),
        &[],
    );
    diagnostics.extend(conflicts.into_iter().map(|c| clash("prompt", &c)));
    for (id, prompt) in raw_prompts {
        let Some(name) = table.name_of(&id) else {
            continue;
        };
        let mut listed = Value::Object(prompt.clone());
        listed["name"] = Value::from(name);
        offers.prompts.push(OfferedPrompt {
            server: id.server.clone(),
            original: id.tool.to_string(),
            listed,
        });
    }
    offers
        .prompts
        .sort_by(|a, b| served_name(&a.listed).cmp(served_name(&b.listed)));
    offers.prompt_index = offers
        .prompts
        .iter()
        .enumerate()
        .map(|(i, p)| (served_name(&p.listed).to_owned(), i))
        .collect();
}

/// What a server can do besides tools, from its declared capabilities.
fn features(server: &ServerOffer<'_>) -> ServerFeatures {
    let caps = server.capabilities;
    ServerFeatures {
        transparent: !server.config.namespace,
        resources: declares(caps, "resources"),
        subscribe: caps
            .pointer("/resources/subscribe")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        completions: declares(caps, "completions"),
        logging: declares(caps, "logging"),
    }
}

/// One server's resources and templates on their way into the offers.
struct Resources<'o, 's> {
    offers: &'o mut Offers,
    diagnostics: &'o mut Vec<Diagnostic>,
    server: &'o ServerOffer<'s>,
    name: &'o Arc<str>,
}

impl Resources<'_, '_> {
    /// Lists `items` (resources, or templates) under their served URIs (the `key` field): those
    /// the server's filter admits, namespaced unless the server is transparent, and not already
    /// held by a server whose name sorts first.
    fn add(&mut self, items: &[Value], key: &str, templates: bool) {
        let name = self.name;
        for item in items {
            let Some(original) = item.get(key).and_then(Value::as_str) else {
                self.diagnostics.push(Diagnostic {
                    server: name.to_string(),
                    message: format!("a resource entry has no {key}; skipped"),
                });
                continue;
            };
            if !self.server.config.resources.admits(original) {
                continue;
            }
            let served = if self.server.config.namespace {
                namespaced_uri(name, original)
            } else {
                original.to_owned()
            };
            let offers = &mut *self.offers;
            let (list, index) = if templates {
                (&mut offers.templates, &mut offers.template_index)
            } else {
                (&mut offers.resources, &mut offers.resource_index)
            };
            if let Some(&holder) = index.get(&served) {
                if list[holder].server != *name {
                    self.diagnostics.push(Diagnostic {
                        server: name.to_string(),
                        message: format!(
                            "resource {served:?} is not served: server {:?} already serves that URI; set \"namespace\": true on one of them",
                            list[holder].server
                        ),
                    });
                }
                continue;
            }
            let mut listed = item.clone();
            listed[key] = Value::from(served.as_str());
            index.insert(served, list.len());
            list.push(OfferedResource {
                server: name.clone(),
                original: original.to_owned(),
                listed,
            });
        }
    }
}

/// The diagnostic for a name a `"namespace": false` server's tool or prompt claims and cannot
/// have: who holds it is named.
pub(crate) fn clash(kind: &str, conflict: &NameConflict) -> Diagnostic {
    let holder = match &conflict.holder {
        NameHolder::Tool(holder) => {
            format!(
                "server {:?} already serves a {kind} of that name",
                holder.server
            )
        }
        NameHolder::Gateway => "it is the name of one of the gateway's own tools".to_owned(),
    };
    Diagnostic {
        server: conflict.refused.server.to_string(),
        message: format!(
            "{kind} {:?} is not served: {holder}; set \"namespace\": true on server {:?}",
            conflict.name, conflict.refused.server
        ),
    }
}

fn served_name(listed: &Value) -> &str {
    listed
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `mcplex://<server, percent-encoded>/<uri>`.
pub fn namespaced_uri(server: &str, uri: &str) -> String {
    let mut out = String::with_capacity(NAMESPACED_URI_PREFIX.len() + server.len() + uri.len() + 1);
    out.push_str(NAMESPACED_URI_PREFIX);
    for byte in server.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out.push('/');
    out.push_str(uri);
    out
}

/// The inverse of [`namespaced_uri`]: `(server, original URI)`.
pub fn split_namespaced_uri(uri: &str) -> Option<(String, &str)> {
    let rest = uri.strip_prefix(NAMESPACED_URI_PREFIX)?;
    let (encoded, original) = rest.split_once('/')?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut input = encoded.bytes();
    while let Some(byte) = input.next() {
        if byte == b'%' {
            let high = char::from(input.next()?).to_digit(16)?;
            let low = char::from(input.next()?).to_digit(16)?;
            bytes.push(u8::try_from(high * 16 + low).ok()?);
        } else {
            bytes.push(byte);
        }
    }
    let server = String::from_utf8(bytes).ok()?;
    (!server.is_empty()).then_some((server, original))
}

/// Whether `uri` is an expansion of the RFC 6570 `template`: literal text must match exactly;
/// a simple `{var}` matches any run without `/`, `?`, `#` or `&`, and an operator expression
/// (`{+var}`, `{/var}`, `{?var}`, ...) matches any run at all. Templates come from upstreams and
/// URIs from clients, so the match is one pass over the URI per template part, never
/// backtracking.
pub fn template_matches(template: &str, uri: &str) -> bool {
    enum Part<'a> {
        Literal(&'a str),
        Expression { simple: bool },
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            return false;
        };
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let expression = &rest[open + 1..close];
        let simple = expression
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        parts.push(Part::Expression { simple });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    // reachable[at]: the parts so far can match exactly uri[..at]. Each part maps that set to the
    // next one in one pass over the URI.
    let mut reachable = vec![false; uri.len() + 1];
    reachable[0] = true;
    for part in &parts {
        let mut next = vec![false; uri.len() + 1];
        match part {
            Part::Literal(literal) => {
                for start in (0..=uri.len()).filter(|&at| reachable[at]) {
                    if uri[start..].starts_with(literal) {
                        next[start + literal.len()] = true;
                    }
                }
            }
            Part::Expression { simple } => {
                // An expansion may end anywhere after a reachable start, unless a simple one
                // would have to run over a delimiter.
                let mut open = false;
                for (at, c) in uri.char_indices().chain(std::iter::once((uri.len(), ' '))) {
                    open |= reachable[at];
                    next[at] = open;
                    if *simple && matches!(c, '/' | '?' | '#' | '&') {
                        open = false;
                    }
                }
            }
        }
        reachable = next;
    }
    reachable[uri.len()]
}

impl Offers {
    /// Served prompts the caller may see, in name order.
    pub fn prompts<'a>(&'a self, scope: &'a Scope) -> impl Iterator<Item = &'a Value> {
        self.prompts
            .iter()
            .filter(move |p| scope.admits(&p.server, Permission::Read))
            .map(|p| &p.listed)
    }

    /// The prompt served as `name`, if the caller may see it.
    pub fn prompt(&self, name: &str, scope: &Scope) -> Option<&OfferedPrompt> {
        let prompt = &self.prompts[*self.prompt_index.get(name)?];
        scope
            .admits(&prompt.server, Permission::Read)
            .then_some(prompt)
    }

    /// Served resources the caller may see.
    pub fn resources<'a>(&'a self, scope: &'a Scope) -> impl Iterator<Item = &'a Value> {
        self.resources
            .iter()
            .filter(move |r| scope.admits(&r.server, Permission::Read))
            .map(|r| &r.listed)
    }

    /// Served resource templates the caller may see.
    pub fn templates<'a>(&'a self, scope: &'a Scope) -> impl Iterator<Item = &'a Value> {
        self.templates
            .iter()
            .filter(move |r| scope.admits(&r.server, Permission::Read))
            .map(|r| &r.listed)
    }

    /// The template served as `template`, if the caller may see it (completion references).
    pub fn template(&self, template: &str, scope: &Scope) -> Option<&OfferedResource> {
        let offered = &self.templates[*self.template_index.get(template)?];
        scope
            .admits(&offered.server, Permission::Read)
            .then_some(offered)
    }

    /// Which upstream serves `uri`, and under which URI of its own:
    /// 1. a listed URI, exactly;
    /// 2. a namespaced URI `mcplex://<server>/<original>` of a server with resources;
    /// 3. a transparent server: the first (by name) with a template that matches, else the only
    ///    transparent server with resources;
    /// 4. an upstream URI as one server listed it (as in a resource a tool returned).
    ///
    /// Only servers in the caller's scope are considered.
    pub fn resolve_uri(&self, uri: &str, scope: &Scope) -> Option<Target> {
        let in_scope = |server: &str| scope.admits(server, Permission::Read);
        if let Some(&i) = self.resource_index.get(uri) {
            let resource = &self.resources[i];
            return in_scope(&resource.server).then(|| Target {
                route: Route::to(&resource.server),
                original: resource.original.clone(),
            });
        }
        if let Some((server, original)) = split_namespaced_uri(uri)
            && let Some((name, features)) = self.features.get_key_value(server.as_str())
            && features.resources
            && in_scope(name)
        {
            return Some(Target {
                route: Route::to(name),
                original: original.to_owned(),
            });
        }
        let transparent: Vec<&Arc<str>> = self
            .features
            .iter()
            .filter(|(name, f)| f.transparent && f.resources && in_scope(name))
            .map(|(name, _)| name)
            .collect();
        let by_template = self
            .templates
            .iter()
            .find(|t| transparent.contains(&&t.server) && template_matches(&t.original, uri));
        let owner = match (by_template, transparent.as_slice()) {
            (Some(template), _) => Some(template.server.clone()),
            (None, [only]) => Some((*only).clone()),
            _ => None,
        };
        if let Some(server) = owner {
            return Some(Target {
                route: Route::to(&server),
                original: uri.to_owned(),
            });
        }
        let mut listed_by = self
            .resources
            .iter()
            .filter(|r| r.original == uri && in_scope(&r.server));
        match (listed_by.next(), listed_by.next()) {
            (Some(only), None) => Some(Target {
                route: Route::to(&only.server),
                original: uri.to_owned(),
            }),
            _ => None,
        }
    }

    /// The URI a client knows for `uri` of `server` (namespaced unless the server is
    /// transparent).
    pub fn served_uri(&self, server: &str, uri: &str) -> String {
        match self.features.get(server) {
            Some(features) if features.transparent => uri.to_owned(),
            _ => namespaced_uri(server, uri),
        }
    }

    /// Whether `other` lists the same prompts, resources and templates (a change is worth a
    /// `list_changed`).
    pub fn same_listing(&self, other: &Offers) -> bool {
        let listed = |items: &[OfferedResource], others: &[OfferedResource]| {
            items.len() == others.len()
                && items
                    .iter()
                    .zip(others)
                    .all(|(a, b)| a.server == b.server && a.listed == b.listed)
        };
        self.prompts.len() == other.prompts.len()
            && self
                .prompts
                .iter()
                .zip(&other.prompts)
                .all(|(a, b)| a.server == b.server && a.listed == b.listed)
            && listed(&self.resources, &other.resources)
            && listed(&self.templates, &other.templates)
    }

    /// Whether what `scope` sees of the prompts (`prompts`) or of the resources and templates
    /// differs between `self` and `other`.
    pub fn changed_for(&self, other: &Offers, scope: &Scope) -> (bool, bool) {
        let prompts = !self.prompts(scope).eq(other.prompts(scope));
        let resources = !self.resources(scope).eq(other.resources(scope))
            || !self.templates(scope).eq(other.templates(scope));
        (prompts, resources)
    }

    /// What a served server can do besides tools.
    pub fn features(&self, server: &str) -> Option<&ServerFeatures> {
        self.features.get(server)
    }

    /// Served servers in the caller's scope, with their features.
    pub fn servers<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> impl Iterator<Item = (Route, &'a ServerFeatures)> {
        self.features
            .iter()
            .filter(move |(name, _)| scope.admits(name, Permission::Read))
            .map(|(name, features)| (Route::to(name), features))
    }
}
