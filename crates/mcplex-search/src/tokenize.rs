//! Text → terms: split into words (also inside identifiers), lowercase, drop stopwords, stem;
//! Chinese and Japanese, written without spaces, into overlapping pairs of characters.

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
        if !word.chars().any(is_ideographic) {
            push_word(word, &mut terms);
            continue;
        }
        for (ideographic, run) in script_runs(word) {
            if ideographic {
                push_bigrams(run, &mut terms);
            } else {
                push_word(run, &mut terms);
            }
        }
    }
    terms
}

/// A word of a script written with spaces: lowercased and stemmed, unless it is a stopword or
/// a single character.
fn push_word(word: &str, terms: &mut Vec<String>) {
    let lower = word.to_lowercase();
    if lower.chars().count() < 2 || STOPWORDS.contains(&lower.as_str()) {
        return;
    }
    terms.push(stem(&lower));
}

/// Whether `c` is written without spaces between words: Chinese characters (Han) and Japanese
/// kana. Korean (Hangul) is written with spaces and stays whole words.
fn is_ideographic(c: char) -> bool {
    matches!(u32::from(c),
        0x3005..=0x3007 // 々 〆 〇
        | 0x303B..=0x303C // 〻 〼
        | 0x3040..=0x30FF // Hiragana, Katakana
        | 0x31F0..=0x31FF // Katakana phonetic extensions
        | 0x3400..=0x4DBF // Han extension A
        | 0x4E00..=0x9FFF // Han
        | 0xF900..=0xFAFF // Han compatibility
        | 0xFF66..=0xFF9F // half-width Katakana
        | 0x20000..=0x2FA1F // Han extensions B to F, compatibility supplement
        | 0x30000..=0x323AF) // Han extensions G and H
}

/// `word` cut where it passes between ideographic and other characters ("rust热门仓库" → "rust",
/// "热门仓库"), each run with whether it is ideographic.
fn script_runs(word: &str) -> Vec<(bool, &str)> {
    let mut runs = Vec::new();
    let mut start = 0;
    let mut current: Option<bool> = None;
    for (at, c) in word.char_indices() {
        let ideographic = is_ideographic(c);
        if let Some(ended) = current.filter(|&run| run != ideographic) {
            runs.push((ended, &word[start..at]));
            start = at;
        }
        current = Some(ideographic);
    }
    if let Some(ideographic) = current {
        runs.push((ideographic, &word[start..]));
    }
    runs
}

/// A run of ideographic text has no spaces to find its words by: its terms are its overlapping
/// pairs of characters ("查询车票" → 查询, 询车, 车票), which match the words of a text in
/// either without a dictionary, as search engines index Chinese and Japanese. A single
/// character between other scripts is a term of its own.
fn push_bigrams(run: &str, terms: &mut Vec<String>) {
    let chars: Vec<char> = run.chars().collect();
    if chars.len() == 1 {
        terms.push(run.to_owned());
        return;
    }
    terms.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>()));
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
