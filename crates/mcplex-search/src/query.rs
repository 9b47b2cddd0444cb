//! What a search query becomes before it is ranked: a request for several things split into its
//! parts ("find the paper, summarise it and email the summary"; or as agents write it, a guess
//! at the kind of server before a `;`, steps joined by a plus sign and alternatives by "or":
//! "file system; write file + create markdown document"), each cleaned of the request phrasing
//! around it ("then", "I need a tool that…", "can you…") and ranked on its own (the whole
//! request is ranked as written; stripping its phrasing is a lever the benchmark keeps).
//! Also the texts a model embeds for one query, and their vectors packed into one slice.

use crate::semantic::{EmbedError, Embedder, embeddable};
use crate::tokenize::tokenize;

/// Openings that say how something is asked, not what: dropped from the start of a query,
/// repeatedly ("Hi, can you please find a tool that…"). Compared in lowercase.
const REQUEST_OPENINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "please",
    "can you",
    "could you",
    "would you",
    "will you",
    "can i",
    "could i",
    "may i",
    "is it possible to",
    "is there a way to",
    "is there any way to",
    "is there a tool that can",
    "is there a tool that",
    "is there a tool to",
    "is there a tool for",
    "is there a tool",
    "is there",
    "are there any",
    "are there",
    "do you have a tool that",
    "do you have a tool to",
    "do you have a tool for",
    "do you have",
    "i need a tool that can",
    "i need a tool that",
    "i need a tool to",
    "i need a tool for",
    "i need to",
    "i need",
    "i want to",
    "i want",
    "i would like to",
    "i'd like to",
    "i'm looking for a tool that",
    "i'm looking for a tool to",
    "i'm looking for",
    "i am looking for",
    "looking for a tool that",
    "looking for a tool to",
    "looking for",
    "help me",
    "how do i",
    "how can i",
    "how to",
    "find a tool that can",
    "find a tool that",
    "find a tool to",
    "find a tool for",
    "a tool that can",
    "a tool that",
    "a tool to",
    "a tool for",
    "tool to",
    "tool for",
    "something that",
    "something to",
    "me",
];

/// Words that always end one request and start the next (and the sentence ends of Chinese and
/// Japanese text, which no space follows).
const BREAKS: &[&str] = &[
    " + ",
    " -> ",
    " and then ",
    ", then ",
    " then ",
    " after that ",
    " afterwards ",
    "; ",
    "；",
    ": ",
    ". ",
    "? ",
    "! ",
    "。",
    "？",
    "！",
];

/// Words that end one request only when the next piece starts with an action
/// ([`ACTIONS`]): "remove some nodes and every link attached to them" is one request, "read
/// the file and email it" two.
const JOINERS: &[&str] = &[", and ", " and also ", " and ", " as well as ", ", "];

/// Verbs a request for a tool starts with, in the imperative.
const ACTIONS: &[&str] = &[
    "add",
    "analyze",
    "analyse",
    "append",
    "apply",
    "book",
    "build",
    "calculate",
    "check",
    "clean",
    "click",
    "commit",
    "compare",
    "compute",
    "convert",
    "copy",
    "count",
    "create",
    "delete",
    "deploy",
    "describe",
    "download",
    "draw",
    "edit",
    "email",
    "estimate",
    "export",
    "extract",
    "fetch",
    "fill",
    "find",
    "format",
    "generate",
    "get",
    "go",
    "insert",
    "kill",
    "list",
    "load",
    "look",
    "make",
    "mark",
    "merge",
    "move",
    "navigate",
    "open",
    "pick",
    "plan",
    "plot",
    "post",
    "predict",
    "print",
    "publish",
    "read",
    "record",
    "remove",
    "rename",
    "render",
    "replace",
    "research",
    "resize",
    "run",
    "save",
    "search",
    "select",
    "send",
    "set",
    "share",
    "show",
    "shuffle",
    "sort",
    "split",
    "stage",
    "start",
    "stop",
    "summarise",
    "summarize",
    "switch",
    "take",
    "tell",
    "translate",
    "turn",
    "update",
    "upload",
    "validate",
    "visualize",
    "write",
];

/// A part needs this many meaningful words to be ranked on its own; shorter pieces ("fear" of
/// "fear and greed") stay in the whole request only.
const MIN_PART_TERMS: usize = 2;
/// Parts ranked at most: the whole request's embedding and each part's cost one model pass.
const MAX_PARTS: usize = 4;

/// `query` without its request phrasing and trailing punctuation: "Can you please find a tool
/// that converts PDFs?" → "converts PDFs". Returns the query unchanged when nothing is left.
pub fn clean_query(query: &str) -> String {
    let mut rest = query.trim();
    loop {
        // The openings are ASCII: only the start of the text is compared, never lowered whole
        // (a long run of openings would make that quadratic).
        let after = REQUEST_OPENINGS.iter().find_map(|opening| {
            let after = rest
                .get(..opening.len())
                .filter(|start| start.eq_ignore_ascii_case(opening))
                .and_then(|_| rest.get(opening.len()..))?;
            after
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric())
                .then_some(after)
        });
        let Some(after) = after else {
            break;
        };
        rest = after
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ',' | '!' | '.' | ':'));
    }
    let rest = rest.trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, '?' | '.' | '!' | ',' | ';' | ':')
    });
    if tokenize(rest).is_empty() {
        query.trim().to_owned()
    } else {
        rest.to_owned()
    }
}

/// Words that open the next step of a request: after a `;`, they say the text before it was a
/// step ("weather in Paris; then read the file"), not a guess at the kind of server.
const CONTINUATIONS: &[&str] = &["then", "and", "also", "after that", "afterwards", "next"];

/// Words a guess at the kind of server has at most ("code hosting platform", "weather or
/// forecast service").
const MAX_KIND_WORDS: usize = 6;

/// Splits off the guess at the kind of server agents often put before the first `;`: "file
/// system; write file + create markdown document" → (`file system`, `write file + create
/// markdown document`). A guess is short (at most [`MAX_KIND_WORDS`] words), does not start with
/// an action (then the `;` ends a request: "read the file; email it"), and leaves a request
/// after it. Without one: (`None`, the query).
pub(crate) fn split_kind(query: &str) -> (Option<&str>, &str) {
    let Some((kind, rest)) = query.split_once([';', '；']) else {
        return (None, query);
    };
    let (kind, rest) = (kind.trim(), rest.trim());
    // "Can you read the file; email it": the request's phrasing hides its action.
    let asked = clean_query(kind);
    // Chinese and Japanese have no spaces: their words are counted as the index counts them.
    let words = asked.split_whitespace().count().max(tokenize(&asked).len());
    let first = asked
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let continues = CONTINUATIONS.iter().any(|word| {
        rest.get(..word.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(word))
            && rest[word.len()..].starts_with(' ')
    });
    if words == 0
        || words > MAX_KIND_WORDS
        || ACTIONS.contains(&first.as_str())
        || continues
        || tokenize(rest).is_empty()
    {
        return (None, query);
    }
    (Some(kind), rest)
}

/// The parts of a request, in order, each cleaned and ranked on its own: the things a request
/// for several things asks for (steps joined by `+`, "then", "and" before an action, `;`), and
/// the alternatives joined by "or" ("list pull requests or search issues"). Empty when the
/// request is one thing (fewer than two parts with [`MIN_PART_TERMS`] meaningful words each),
/// except after a guess at the kind of server ([`split_kind`]): then the request after it is a
/// part even alone, so a wrong guess, which the whole request is ranked with, cannot take every
/// place.
pub fn query_parts(query: &str) -> Vec<String> {
    let (kind, query) = split_kind(query);
    let mut pieces = vec![clean_query(query)];
    for separator in BREAKS {
        pieces = pieces
            .iter()
            .flat_map(|piece| split_ignoring_case(piece, separator))
            .collect();
    }
    for joiner in JOINERS {
        pieces = pieces
            .iter()
            .flat_map(|piece| split_before_actions(piece, joiner))
            .collect();
    }
    pieces = pieces
        .iter()
        .flat_map(|piece| split_alternatives(piece))
        .collect();
    let parts: Vec<String> = pieces
        .iter()
        .map(|piece| clean_query(piece))
        .filter(|piece| tokenize(piece).len() >= MIN_PART_TERMS)
        .take(MAX_PARTS)
        .collect();
    let alone = if kind.is_some() { 1 } else { 2 };
    if parts.len() < alone {
        Vec::new()
    } else {
        parts
    }
}

/// `text` split at " or " where both sides ask for something of their own (at least
/// [`MIN_PART_TERMS`] meaningful words each): "list open pull requests or search issues" is two
/// ways to one end, "weather or forecast" one thing, and so is a count with its alternative
/// ("find two or three papers").
fn split_alternatives(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in split_ignoring_case(text, " or ") {
        match pieces.last_mut() {
            Some(last)
                if last.split_whitespace().next_back().is_some_and(is_count)
                    && piece.split_whitespace().next().is_some_and(is_count) =>
            {
                last.push_str(" or ");
                last.push_str(&piece);
            }
            _ => pieces.push(piece),
        }
    }
    if pieces.len() > 1
        && pieces
            .iter()
            .all(|piece| tokenize(piece).len() >= MIN_PART_TERMS)
    {
        pieces
    } else {
        vec![text.to_owned()]
    }
}

/// Whether `word` is a number: digits, or a count in words up to ten.
fn is_count(word: &str) -> bool {
    const COUNTS: &[&str] = &[
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    (!word.is_empty() && word.chars().all(|c| c.is_ascii_digit()))
        || COUNTS.iter().any(|count| word.eq_ignore_ascii_case(count))
}

/// `text` split at `joiner` where the next piece starts with an action.
fn split_before_actions(text: &str, joiner: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in split_ignoring_case(text, joiner) {
        let first = piece
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_lowercase();
        match pieces.last_mut() {
            Some(last) if !ACTIONS.contains(&first.as_str()) => {
                last.push_str(joiner);
                last.push_str(&piece);
            }
            _ => pieces.push(piece),
        }
    }
    pieces
}

/// `text` split at `separator`, ignoring ASCII case. Only ASCII letters are lowered, so every
/// byte offset of the copy is one of `text` (and a separator that is not ASCII matches as
/// written).
fn split_ignoring_case(text: &str, separator: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut pieces = Vec::new();
    let mut start = 0;
    for (at, _) in lower.match_indices(separator) {
        pieces.push(text[start..at].to_owned());
        start = at + separator.len();
    }
    pieces.push(text[start..].to_owned());
    pieces
}

/// The texts embedded for `query`: the request as written, then, when requests are split
/// (`split_parts`), each of its [`query_parts`] (cleaned: a part's own opening, such as "then"
/// or "can you", is not what it asks for). The whole request is not cleaned: cleaning it cost
/// recall on every set where it changed anything (`docs/search.md`).
pub fn query_texts(query: &str, split_parts: bool) -> Vec<String> {
    let mut texts = vec![embeddable(query.trim()).to_owned()];
    if !split_parts {
        return texts;
    }
    texts.extend(
        query_parts(query)
            .into_iter()
            .map(|part| embeddable(&part).to_owned()),
    );
    texts
}

/// The vectors of [`query_texts`], embedded in one model call and packed one after the other:
/// what [`crate::Semantic::query`] expects for a ranking that splits requests as `split_parts`
/// says.
pub fn embed_query(
    embedder: &dyn Embedder,
    query: &str,
    split_parts: bool,
) -> Result<Vec<f32>, EmbedError> {
    let texts = query_texts(query, split_parts);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&refs)?;
    if vectors.len() != texts.len() {
        return Err(EmbedError(format!(
            "the model answered {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    Ok(vectors.concat())
}
