//! The registration table: canonical ids ⇄ display names, built once per catalog snapshot.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::sanitize::{MAX_NAME_LEN, is_valid_name, sanitize};

/// The canonical identity of an upstream tool: the server's configured name and the tool's own
/// name, exactly as the upstream sent it. Written `server:tool`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolId {
    pub server: Arc<str>,
    pub tool: Arc<str>,
}

impl ToolId {
    pub fn new(server: impl Into<Arc<str>>, tool: impl Into<Arc<str>>) -> ToolId {
        ToolId {
            server: server.into(),
            tool: tool.into(),
        }
    }

    /// Parses `server:tool`. Server names never contain `:` (the config refuses them), so the
    /// first `:` is the separator and the tool part may contain more.
    pub fn parse(canonical: &str) -> Option<ToolId> {
        let (server, tool) = canonical.split_once(':')?;
        (!server.is_empty() && !tool.is_empty()).then(|| ToolId::new(server, tool))
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.server, self.tool)
    }
}

impl fmt::Debug for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// A name a tool of a `"namespace": false` server claims and cannot have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameConflict {
    pub name: String,
    /// Who has the name.
    pub holder: NameHolder,
    /// The id left without a name.
    pub refused: ToolId,
}

/// Who holds a name another tool claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameHolder {
    /// A tool of another server: one with `"namespace": false` whose id sorts first, or a
    /// namespaced one whose `server__tool` name it is.
    Tool(ToolId),
    /// The gateway: it is one of the names it reserves for its own tools.
    Gateway,
}

/// Hex digits of the suffix that disambiguates a shortened or colliding name.
const HASH_LEN: usize = 8;

/// Display names for a set of tool ids. The same set of ids always yields the same names,
/// whatever order they come in; distinct ids always get distinct names.
#[derive(Debug, Clone, Default)]
pub struct RegistrationTable {
    by_name: HashMap<String, ToolId>,
    by_id: HashMap<ToolId, String>,
}

impl RegistrationTable {
    /// Assigns a display name to every id (duplicates are ignored).
    pub fn build(ids: impl IntoIterator<Item = ToolId>) -> RegistrationTable {
        RegistrationTable::build_with(ids, |_| false, &[]).0
    }

    /// Like [`RegistrationTable::build`], but ids for which `own_name` holds (tools of servers
    /// with `"namespace": false`) keep their own name, unprefixed. Such a name must be a valid
    /// display name and free: not one of `reserved` (the gateway's own tools), not the
    /// `server__tool` name of a namespaced id, and not claimed by a smaller such id. An id whose
    /// name is taken gets no name at all; it is returned with who holds the name, so the
    /// operator can be told both. Namespaced ids never take a claimed name (they are hashed).
    pub fn build_with(
        ids: impl IntoIterator<Item = ToolId>,
        own_name: impl Fn(&ToolId) -> bool,
        reserved: &[&str],
    ) -> (RegistrationTable, Vec<NameConflict>) {
        let mut table = RegistrationTable::default();
        let mut conflicts = Vec::new();
        let (mut own, namespaced): (Vec<ToolId>, Vec<ToolId>) =
            ids.into_iter().partition(|id| own_name(id));
        let mut natural_names: HashMap<String, &ToolId> = HashMap::new();
        for id in &namespaced {
            natural_names
                .entry(natural_name(id))
                .and_modify(|holder| *holder = (*holder).min(id))
                .or_insert(id);
        }
        own.sort();
        own.dedup();
        for id in own {
            let name = if is_valid_name(&id.tool) {
                id.tool.to_string()
            } else {
                sanitize(&id.tool)
            };
            let holder = if reserved.contains(&name.as_str()) {
                Some(NameHolder::Gateway)
            } else {
                table
                    .by_name
                    .get(&name)
                    .or_else(|| natural_names.get(&name).copied())
                    .map(|holder| NameHolder::Tool(holder.clone()))
            };
            match holder {
                Some(holder) => conflicts.push(NameConflict {
                    name,
                    holder,
                    refused: id,
                }),
                None if is_valid_name(&name) => table.insert(name, id),
                None => {
                    let name = table.free_hashed_name(&name, &id);
                    table.insert(name, id);
                }
            }
        }
        table.add_namespaced(namespaced);
        (table, conflicts)
    }

    fn add_namespaced(&mut self, ids: Vec<ToolId>) {
        // Group ids by their natural name `sanitize(server)__sanitize(tool)`.
        let mut groups: BTreeMap<String, Vec<ToolId>> = BTreeMap::new();
        for id in ids {
            let natural = natural_name(&id);
            let group = groups.entry(natural).or_default();
            if !group.contains(&id) {
                group.push(id);
            }
        }
        let mut hashed = Vec::new();
        for (natural, group) in groups {
            // In a colliding group only the one id whose raw name already is the natural name
            // may keep it (if two are exact, e.g. `a__b`+`c` and `a`+`b__c`, neither does); all
            // others are hashed, so no id's name depends on arrival order.
            let exact = |id: &ToolId| format!("{}__{}", id.server, id.tool) == natural;
            let exact_count = group.iter().filter(|id| exact(id)).count();
            for id in group.iter() {
                let keeps = is_valid_name(&natural)
                    && !self.by_name.contains_key(&natural)
                    && (group.len() == 1 || (exact_count == 1 && exact(id)));
                if keeps {
                    self.insert(natural.clone(), id.clone());
                } else {
                    hashed.push((natural.clone(), id.clone()));
                }
            }
        }
        for (natural, id) in hashed {
            let name = self.free_hashed_name(&natural, &id);
            self.insert(name, id);
        }
    }

    fn insert(&mut self, name: String, id: ToolId) {
        self.by_id.insert(id.clone(), name.clone());
        self.by_name.insert(name, id);
    }

    /// `natural` cut to fit, then `_` and a hash of the canonical id. Should that name be taken
    /// (a natural name that happens to look hashed), the hash input is salted until it is free.
    fn free_hashed_name(&self, natural: &str, id: &ToolId) -> String {
        let canonical = id.to_string();
        let mut salt = 0u32;
        loop {
            let seed = if salt == 0 {
                canonical.clone()
            } else {
                format!("{canonical}#{salt}")
            };
            let name = hashed_name(natural, &seed);
            if !self.by_name.contains_key(&name) {
                return name;
            }
            salt += 1;
        }
    }

    /// The id a display name stands for.
    pub fn resolve(&self, name: &str) -> Option<&ToolId> {
        self.by_name.get(name)
    }

    /// The display name of an id.
    pub fn name_of(&self, id: &ToolId) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// A namespaced id's name before any hashing: `sanitize(server)__sanitize(tool)`.
fn natural_name(id: &ToolId) -> String {
    format!("{}__{}", sanitize(&id.server), sanitize(&id.tool))
}

fn hashed_name(natural: &str, seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let hex: String = digest
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect();
    // `natural` is ASCII (sanitized), so byte slicing is on char boundaries.
    let keep = natural.len().min(MAX_NAME_LEN - HASH_LEN - 1);
    format!("{}_{hex}", &natural[..keep])
}
