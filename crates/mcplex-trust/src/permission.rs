//! What a tool may do, read off its annotations, and sets of those permissions.

use std::fmt;

use serde_json::{Map, Value};

/// The permission a call to a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Permission {
    /// The tool says it does not modify its environment (`readOnlyHint: true`).
    Read,
    /// Anything that is neither read-only nor declared destructive. Un-annotated tools are here:
    /// a missing hint never grants `read`.
    Write,
    /// The tool says it may destroy data (`destructiveHint: true`, and not read-only).
    Destructive,
}

impl Permission {
    pub const ALL: [Permission; 3] = [Permission::Read, Permission::Write, Permission::Destructive];

    /// The permission a tool needs, from its raw MCP tool object.
    pub fn of(tool: &Map<String, Value>) -> Permission {
        let hint = |name: &str| {
            tool.get("annotations")
                .and_then(|a| a.get(name))
                .and_then(Value::as_bool)
        };
        if hint("readOnlyHint") == Some(true) {
            Permission::Read
        } else if hint("destructiveHint") == Some(true) {
            Permission::Destructive
        } else {
            Permission::Write
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Destructive => "destructive",
        }
    }

    pub fn parse(text: &str) -> Option<Permission> {
        Permission::ALL.into_iter().find(|p| p.as_str() == text)
    }

    fn bit(self) -> u8 {
        match self {
            Permission::Read => 1,
            Permission::Write => 2,
            Permission::Destructive => 4,
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Permissions(u8);

impl Permissions {
    pub const ALL: Permissions = Permissions(7);

    pub fn contains(self, permission: Permission) -> bool {
        self.0 & permission.bit() != 0
    }

    pub fn with(self, permission: Permission) -> Permissions {
        Permissions(self.0 | permission.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Parses a comma-separated list such as `read,write`. Names the first unknown entry.
    pub fn parse(text: &str) -> Result<Permissions, PermissionsError> {
        let mut set = Permissions::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let permission = Permission::parse(part)
                .ok_or_else(|| PermissionsError::Unknown(part.to_owned()))?;
            set = set.with(permission);
        }
        if set.is_empty() {
            return Err(PermissionsError::Empty);
        }
        Ok(set)
    }
}

/// A list of permissions that is not one: it names an unknown one, or none at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionsError {
    /// The first entry that is not `read`, `write` or `destructive`.
    Unknown(String),
    Empty,
}

impl fmt::Display for PermissionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermissionsError::Unknown(part) => write!(
                f,
                "unknown permission {part:?} (expected read, write or destructive)"
            ),
            PermissionsError::Empty => {
                f.write_str("no permission given (expected read, write and/or destructive)")
            }
        }
    }
}

impl std::error::Error for PermissionsError {}

impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Permission::ALL
            .into_iter()
            .filter(|p| self.contains(*p))
            .map(Permission::as_str)
            .collect();
        f.write_str(&names.join(","))
    }
}
