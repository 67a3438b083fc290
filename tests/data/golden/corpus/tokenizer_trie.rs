//! tokenizer_trie.rs - a byte trie for longest-prefix matching, with tests.
//!
//! Written for the vsynth tokenizer corpus: Rust with lifetimes, traits, iterators,
//! pattern matching, `?`, closures, macros, derive attributes and doc comments.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Default, Clone)]
struct Node {
    children: BTreeMap<u8, usize>,
    value: Option<u32>,
}

/// Maps byte strings to ids; `longest_prefix` finds the longest key that starts `text`.
#[derive(Debug, Default)]
pub struct Trie {
    nodes: Vec<Node>,
    len: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub enum TrieError {
    EmptyKey,
    Duplicate { key: String, existing: u32 },
}

impl fmt::Display for TrieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrieError::EmptyKey => write!(f, "empty keys are not allowed"),
            TrieError::Duplicate { key, existing } => {
                write!(f, "key {key:?} already maps to {existing}")
            }
        }
    }
}

impl std::error::Error for TrieError {}

impl Trie {
    pub fn new() -> Self {
        Self { nodes: vec![Node::default()], len: 0 }
    }

    pub fn insert(&mut self, key: &[u8], id: u32) -> Result<(), TrieError> {
        if key.is_empty() {
            return Err(TrieError::EmptyKey);
        }
        let mut at = 0usize;
        for &b in key {
            at = match self.nodes[at].children.get(&b) {
                Some(&next) => next,
                None => {
                    self.nodes.push(Node::default());
                    let next = self.nodes.len() - 1;
                    self.nodes[at].children.insert(b, next);
                    next
                }
            };
        }
        if let Some(existing) = self.nodes[at].value {
            return Err(TrieError::Duplicate { key: String::from_utf8_lossy(key).into_owned(), existing });
        }
        self.nodes[at].value = Some(id);
        self.len += 1;
        Ok(())
    }

    /// Returns `(id, matched_len)` of the longest key that prefixes `text`.
    pub fn longest_prefix(&self, text: &[u8]) -> Option<(u32, usize)> {
        let mut best = None;
        let mut at = 0usize;
        for (i, b) in text.iter().enumerate() {
            match self.nodes[at].children.get(b) {
                Some(&next) => at = next,
                None => break,
            }
            if let Some(id) = self.nodes[at].value {
                best = Some((id, i + 1));
            }
        }
        best
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<'a> FromIterator<(&'a str, u32)> for Trie {
    fn from_iter<I: IntoIterator<Item = (&'a str, u32)>>(iter: I) -> Self {
        let mut t = Trie::new();
        for (k, v) in iter {
            t.insert(k.as_bytes(), v).expect("unique, non-empty keys");
        }
        t
    }
}

fn segment<'t>(trie: &Trie, text: &'t str) -> Vec<&'t str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let n = trie.longest_prefix(&bytes[i..]).map_or_else(
            || text[i..].chars().next().map_or(1, char::len_utf8),
            |(_, n)| n,
        );
        out.push(&text[i..i + n]);
        i += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_wins() -> Result<(), Box<dyn std::error::Error>> {
        let trie: Trie = [("<", 1), ("<start", 2), ("<start_of_turn>", 3)].into_iter().collect();
        assert_eq!(trie.longest_prefix(b"<start_of_turn>user"), Some((3, 15)));
        assert_eq!(segment(&trie, "a<starté"), vec!["a", "<start", "é"]);
        assert!(matches!(Trie::new().insert(b"", 0), Err(TrieError::EmptyKey)));
        Ok(())
    }
}

fn main() {
    let trie: Trie = [("fn", 10), ("fn main", 11), ("main", 12)].into_iter().collect();
    println!("{} keys: {:?}", trie.len(), segment(&trie, "fn main() { println!(\"🦀\"); }"));
}
