//! Near-key suggestions: the known key a misspelled one was meant to be (`comand` → `command`),
//! by edit distance, so that a typo is refused with its fix instead of silently ignored.

/// The known key closest to `key`, when it is near enough to be a misspelling of it: the same
/// key in another case, or at most one edit away (two for keys longer than four characters).
pub(crate) fn near_key<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let lowered = key.to_lowercase();
    if let Some(same) = known.iter().find(|k| k.to_lowercase() == lowered) {
        return Some(same);
    }
    known
        .iter()
        .map(|candidate| {
            (
                edit_distance(&lowered, &candidate.to_lowercase()),
                *candidate,
            )
        })
        .filter(|(distance, candidate)| *distance <= if candidate.len() > 4 { 2 } else { 1 })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance (insertions, deletions and substitutions), by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::near_key;

    const KEYS: &[&str] = &[
        "command",
        "args",
        "call_timeout",
        "url",
        "mcpServers",
        "env",
    ];

    #[test]
    fn a_misspelling_names_the_key_it_was_meant_to_be() {
        assert_eq!(near_key("comand", KEYS), Some("command"));
        assert_eq!(near_key("arg", KEYS), Some("args"));
        assert_eq!(near_key("call_timout", KEYS), Some("call_timeout"));
        assert_eq!(near_key("mcpServer", KEYS), Some("mcpServers"));
        assert_eq!(near_key("mcpservers", KEYS), Some("mcpServers"));
    }

    #[test]
    fn a_foreign_key_has_no_suggestion() {
        assert_eq!(near_key("autoApprove", KEYS), None);
        assert_eq!(near_key("envFile", KEYS), None);
        assert_eq!(near_key("colour", KEYS), None);
    }
}
