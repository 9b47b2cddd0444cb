//! Tool-name globs for `tools.include` / `tools.exclude` / `tools.defer`: `*` matches any run of
//! characters, `?` exactly one; everything else matches itself. No character classes, so no
//! pattern is ever invalid and none needs escaping in practice.

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: Vec<char>,
}

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob {
            pattern: pattern.chars().collect(),
        }
    }

    /// The pattern as written.
    pub fn pattern(&self) -> String {
        self.pattern.iter().collect()
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        // Iterative wildcard matching with single-star backtracking: linear in practice.
        let (mut p, mut t) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.pattern.get(p) {
                Some('*') => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(&c) if c == '?' || c == text[t] => {
                    p += 1;
                    t += 1;
                }
                _ => match star {
                    Some((star_p, star_t)) => {
                        p = star_p + 1;
                        t = star_t + 1;
                        star = Some((star_p, star_t + 1));
                    }
                    None => return false,
                },
            }
        }
        self.pattern[p..].iter().all(|c| *c == '*')
    }
}

/// Which tools of one server are visible and which are deferred.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolFilter {
    /// Empty: every tool is included.
    pub include: Vec<Glob>,
    pub exclude: Vec<Glob>,
    pub defer: Vec<Glob>,
}

impl ToolFilter {
    /// Whether a tool of this name is visible at all (included and not excluded).
    pub fn admits(&self, tool: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| g.matches(tool)))
            && !self.exclude.iter().any(|g| g.matches(tool))
    }

    /// Whether a tool-level `defer` glob names this tool.
    pub fn defers(&self, tool: &str) -> bool {
        self.defer.iter().any(|g| g.matches(tool))
    }
}
