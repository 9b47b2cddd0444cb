//! One `mcpServers` entry read key by key: its transport (a process or a URL, and everything
//! each needs) and its options, every refusal naming the key's path.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::model::{Lifecycle, Transport};
use crate::parse::{Cx, kind};
use crate::{ConfigError, InheritEnv, ToolFilter};

/// A server's JSON object, with where it is in the file.
pub(crate) struct Entry<'a> {
    pub(crate) cx: &'a Cx<'a>,
    /// Its key path, `mcpServers.github` or `mcpServers[2]`.
    pub(crate) key: &'a str,
    pub(crate) object: &'a Map<String, Value>,
    /// The top-level `sandbox` (or the default one): what a stdio server's own overrides.
    pub(crate) sandbox: &'a crate::Sandbox,
}

impl Entry<'_> {
    /// The value of `field`, unless absent or null.
    fn field(&self, field: &str) -> Option<&Value> {
        self.object.get(field).filter(|v| !v.is_null())
    }

    fn path(&self, field: &str) -> String {
        format!("{}.{field}", self.key)
    }

    fn text(&self, field: &str) -> Result<Option<&str>, ConfigError> {
        self.field(field)
            .map(|v| self.cx.string(v, &self.path(field)))
            .transpose()
    }

    pub(crate) fn flag(&self, field: &str) -> Result<Option<bool>, ConfigError> {
        self.field(field)
            .map(|v| self.cx.bool(v, &self.path(field)))
            .transpose()
    }

    pub(crate) fn duration(&self, field: &str) -> Result<Option<Duration>, ConfigError> {
        self.text(field)?
            .map(|text| self.cx.duration(text, &self.path(field)))
            .transpose()
    }

    pub(crate) fn filter(
        &self,
        field: &str,
        tools: bool,
        warnings: &mut Vec<String>,
    ) -> Result<ToolFilter, ConfigError> {
        Ok(self
            .field(field)
            .map(|v| self.cx.tool_filter(v, &self.path(field), tools, warnings))
            .transpose()?
            .unwrap_or_default())
    }

    pub(crate) fn lifecycle(&self) -> Result<Lifecycle, ConfigError> {
        match self.text("lifecycle")? {
            None | Some("initialize") => Ok(Lifecycle::Initialize),
            Some("discover") => Ok(Lifecycle::Discover),
            Some(other) => Err(self.cx.err(
                self.path("lifecycle"),
                format!("unknown lifecycle {other:?}; expected \"initialize\" (2025 era) or \"discover\" (2026-07-28)"),
            )),
        }
    }

    /// `"oauth"`, for a URL server only.
    pub(crate) fn oauth(
        &self,
        transport: &Transport,
        warnings: &mut Vec<String>,
    ) -> Result<Option<crate::OAuthConfig>, ConfigError> {
        let Some(value) = self.field("oauth") else {
            return Ok(None);
        };
        if !matches!(transport, Transport::Http { .. } | Transport::Sse { .. }) {
            return Err(self.cx.err(
                self.path("oauth"),
                "only a URL server (\"url\") logs in with OAuth",
            ));
        }
        self.cx
            .oauth(value, &self.path("oauth"), warnings)
            .map(Some)
    }

    /// `"trust": "auto"`.
    pub(crate) fn trust_auto(&self) -> Result<bool, ConfigError> {
        match self.text("trust")? {
            None | Some("manual") => Ok(false),
            Some("auto") => Ok(true),
            Some(other) => Err(self.cx.err(
                self.path("trust"),
                format!("unknown trust {other:?}; expected \"manual\" (new tools wait for approval) or \"auto\" (new tools are approved; changed ones never are)"),
            )),
        }
    }

    /// A process (`command`) or a URL (`url`), as `protocol` (or `type`) says; `auto` decides by
    /// which of the two is there.
    pub(crate) fn transport(&self, warnings: &mut Vec<String>) -> Result<Transport, ConfigError> {
        let command = self.text("command")?;
        let url = self.text("url")?;
        let headers = self
            .field("headers")
            .map(|v| self.cx.string_map(v, &self.path("headers")))
            .transpose()?
            .unwrap_or_default();
        let (protocol_key, protocol) = match (self.field("protocol"), self.field("type")) {
            (Some(_), _) => ("protocol", self.text("protocol")?),
            (None, Some(_)) => ("type", self.text("type")?),
            (None, None) => ("protocol", None),
        };
        let protocol = protocol.unwrap_or("auto");
        let key = self.key;
        match (protocol, command, url) {
            (_, Some(_), Some(_)) => Err(self.cx.err(
                key,
                "has both \"command\" and \"url\"; a server is either a process or a URL",
            )),
            ("stdio" | "auto", Some(command), None) => self.stdio(command, warnings),
            ("http" | "streamable-http" | "streamableHttp" | "auto", None, Some(url)) => {
                self.cx.url(url, &self.path("url"))?;
                Ok(Transport::Http {
                    url: url.to_owned(),
                    headers,
                    fallback_to_sse: protocol == "auto",
                })
            }
            ("sse", None, Some(url)) => {
                self.cx.url(url, &self.path("url"))?;
                Ok(Transport::Sse {
                    url: url.to_owned(),
                    headers,
                })
            }
            ("stdio", None, _) => Err(self
                .cx
                .err(self.path("command"), "required for protocol \"stdio\"")),
            ("http" | "streamable-http" | "streamableHttp" | "sse", _, None) => Err(self.cx.err(
                self.path("url"),
                format!("required for protocol {protocol:?}"),
            )),
            ("auto", None, None) => Err(self
                .cx
                .err(key, "needs \"command\" (stdio) or \"url\" (HTTP)")),
            (other, _, _) => Err(self.cx.err(
                self.path(protocol_key),
                format!(
                    "unknown protocol {other:?}; expected \"stdio\", \"http\", \"sse\" or \"auto\""
                ),
            )),
        }
    }

    /// A child process: `command` and its `args`, `env`, `working_dir` (or `cwd`) and which of
    /// the gateway's environment it inherits.
    fn stdio(&self, command: &str, warnings: &mut Vec<String>) -> Result<Transport, ConfigError> {
        if command.trim().is_empty() {
            return Err(self.cx.err(self.path("command"), "must not be empty"));
        }
        let args = match self.field("args") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    self.cx
                        .string(v, &format!("{}.args[{i}]", self.key))
                        .map(str::to_owned)
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(self.cx.err(
                    self.path("args"),
                    format!("must be an array of strings, found {}", kind(other)),
                ));
            }
        };
        let env = self
            .field("env")
            .map(|v| self.cx.string_map(v, &self.path("env")))
            .transpose()?
            .unwrap_or_default();
        let working_dir = match (self.field("working_dir"), self.field("cwd")) {
            (Some(_), _) => self.text("working_dir")?.map(PathBuf::from),
            (None, Some(_)) => self.text("cwd")?.map(PathBuf::from),
            (None, None) => None,
        };
        let mut inherit_env = match self.field("inherit_env") {
            None | Some(Value::Bool(false)) => InheritEnv::default(),
            Some(Value::Bool(true)) => InheritEnv::All,
            Some(list @ Value::Array(_)) => {
                InheritEnv::AllowList(self.cx.globs(list, &self.path("inherit_env"))?)
            }
            Some(other) => {
                return Err(self.cx.err(
                    self.path("inherit_env"),
                    format!(
                        "must be true, false or an array of variable names, found {}",
                        kind(other)
                    ),
                ));
            }
        };
        let (sandbox, passed) = crate::sandbox::read_sandbox(
            self.cx,
            self.field("sandbox"),
            &self.path("sandbox"),
            self.sandbox,
            warnings,
        )?;
        // `sandbox.env` names what `inherit_env` names: one list of what the process inherits.
        if let InheritEnv::AllowList(globs) = &mut inherit_env {
            globs.extend(passed);
            for glob in globs
                .iter()
                .filter(|glob| crate::gateways_own::only_gateways_own(glob))
            {
                warnings.push(format!(
                    "{}: {:?} is never passed: no server inherits the gateway's own MCPLEX_* and OTEL_* variables (set what it needs in its env)",
                    self.path("inherit_env"),
                    glob.pattern()
                ));
            }
        }
        Ok(Transport::Stdio {
            command: command.to_owned(),
            args,
            env,
            working_dir,
            inherit_env,
            sandbox,
        })
    }
}
