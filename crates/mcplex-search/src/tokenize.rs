//! Text → terms: split into words (also inside identifiers), lowercase, drop stopwords, stem.

/// Words too common in tool descriptions and requests to tell tools apart.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "each", "for", "from", "get",
    "give", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "please",
    "show", "tell", "that", "the", "their", "them", "this", "to", "use", "using", "want", "what",
    "which", "with", "you", "your",
];

/// The terms of `text`, in order (duplicates kept: term frequency matters).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    for word in split_words(text) {
        let lower = word.to_lowercase();
        if lower.chars().count() < 2 || STOPWORDS.contains(&lower.as_str()) {
            continue;
        }
        terms.push(stem(&lower));
    }
    terms
}

/// Splits on anything not alphanumeric, and inside words at camelCase and letter/digit changes.
pub(crate) fn split_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let chars: Vec<(usize, char)> = chunk.char_indices().collect();
        for pair in chars.windows(2) {
            let ((_, a), (index, b)) = (pair[0], pair[1]);
            let camel = a.is_lowercase() && b.is_uppercase();
            let digit_change = a.is_ascii_digit() != b.is_ascii_digit();
            if camel || digit_change {
                words.push(&chunk[start..index]);
                start = index;
            }
        }
        if start < chunk.len() {
            words.push(&chunk[start..]);
        }
    }
    words.into_iter().filter(|w| !w.is_empty()).collect()
}

/// A light suffix stemmer: plural and verb endings, enough to match `files` with `file` and
/// `listing` with `list` without the over-stemming of a full Porter stemmer.
fn stem(word: &str) -> String {
    let n = word.len();
    if !word.is_ascii() || n <= 3 {
        return word.to_owned();
    }
    if let Some(base) = word.strip_suffix("ies").filter(|_| n > 4) {
        return format!("{base}y");
    }
    if let Some(base) = word.strip_suffix("sses") {
        return format!("{base}ss");
    }
    for ending in ["ches", "shes", "xes"] {
        if let Some(base) = word.strip_suffix(ending) {
            return format!("{base}{}", &ending[..ending.len() - 2]);
        }
    }
    if let Some(base) = word.strip_suffix("ing").filter(|b| b.len() >= 4) {
        return undouble(base);
    }
    if let Some(base) = word.strip_suffix("ed").filter(|b| b.len() >= 4) {
        return undouble(base);
    }
    if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..n - 1].to_owned();
    }
    word.to_owned()
}

/// `runn` → `run`, `committ` → `commit` (after stripping -ing/-ed).
fn undouble(base: &str) -> String {
    let bytes = base.as_bytes();
    let n = bytes.len();
    if n >= 2 && bytes[n - 1] == bytes[n - 2] && !matches!(bytes[n - 1], b'l' | b's' | b'z') {
        return base[..n - 1].to_owned();
    }
    base.to_owned()
}
