//! JSON text inside protobuf (`RawExtension.raw`, and so `FieldsV1` and `JSON`), read in
//! place by the typed decoder.
//!
//! Contract: [`Cursor`] reads the JSON text of one value token by token for the
//! deserializer's map, list and value types, so the visitor builds its value in one pass
//! (a `serde_json::Value` of `fieldsV1` was built once by serde_json and a second time by
//! the visitor reading it). It accepts exactly what `serde_json::from_slice` accepts and
//! presents what serde_json's deserializer presents: numbers and escaped strings are
//! handed to serde_json itself, literals and structure are checked here, nesting stops at
//! serde_json's recursion limit of 128, and text after the value is an error.

use std::borrow::Cow;

use super::Unsupported;

/// serde_json's recursion limit.
const MAX_NESTING: usize = 128;

/// A position in the JSON text of one value.
pub(super) struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
    nesting: usize,
}

/// One scalar token, or the start of an object or array (already consumed).
pub(super) enum Token<'a> {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(&'a str),
    String(String),
    Object,
    Array,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(text: &'a [u8]) -> Self {
        Cursor {
            text,
            pos: 0,
            nesting: 0,
        }
    }

    fn error<T>(&self, what: &str) -> Result<T, Unsupported> {
        Err(Unsupported(format!(
            "the embedded object is not JSON: {what} at byte {}",
            self.pos
        )))
    }

    /// Where the next non-whitespace byte is (the end when there is none).
    fn after_whitespace(&self) -> usize {
        let mut at = self.pos;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(at) {
            at += 1;
        }
        at
    }

    fn skip_whitespace(&mut self) {
        self.pos = self.after_whitespace();
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.get(self.pos).copied()
    }

    /// Whether the next value is `null` (not consumed).
    pub(super) fn at_null(&self) -> bool {
        self.text.get(self.after_whitespace()) == Some(&b'n')
    }

    /// After the value: only whitespace may follow.
    pub(super) fn end(&mut self) -> Result<(), Unsupported> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.error("trailing characters"),
        }
    }

    /// The next value's token; an object or array is entered.
    pub(super) fn token(&mut self) -> Result<Token<'a>, Unsupported> {
        let Some(b) = self.peek() else {
            return self.error("EOF while parsing a value");
        };
        match b {
            b'{' | b'[' => {
                // serde_json counts down from 128 and fails on reaching 0: 127 levels.
                if self.nesting + 1 >= MAX_NESTING {
                    return self.error("recursion limit exceeded");
                }
                self.nesting += 1;
                self.pos += 1;
                Ok(if b == b'{' {
                    Token::Object
                } else {
                    Token::Array
                })
            }
            b'"' => Ok(match self.string()? {
                Cow::Borrowed(s) => Token::Str(s),
                Cow::Owned(s) => Token::String(s),
            }),
            b'n' => self.literal("null", Token::Null),
            b't' => self.literal("true", Token::Bool(true)),
            b'f' => self.literal("false", Token::Bool(false)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.error("expected value"),
        }
    }

    fn literal(&mut self, word: &str, token: Token<'a>) -> Result<Token<'a>, Unsupported> {
        if self.text[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(token)
        } else {
            self.error("expected value")
        }
    }

    /// A number, read by serde_json from the longest run of number characters (so its
    /// grammar and its choice of u64, i64 or f64 are serde_json's).
    fn number(&mut self) -> Result<Token<'a>, Unsupported> {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.text.get(self.pos) {
            self.pos += 1;
        }
        let n: serde_json::Number = match serde_json::from_slice(&self.text[start..self.pos]) {
            Ok(n) => n,
            Err(e) => {
                self.pos = start;
                return self.error(&e.to_string());
            }
        };
        if let Some(u) = n.as_u64() {
            Ok(Token::U64(u))
        } else if let Some(i) = n.as_i64() {
            Ok(Token::I64(i))
        } else if let Some(f) = n.as_f64() {
            Ok(Token::F64(f))
        } else {
            self.error("number out of range")
        }
    }

    /// A string at the cursor: borrowed when it has no escapes, else unescaped by
    /// serde_json.
    fn string(&mut self) -> Result<Cow<'a, str>, Unsupported> {
        let start = self.pos;
        let mut i = start + 1;
        let mut escaped = false;
        loop {
            match self.text.get(i) {
                None => {
                    self.pos = i;
                    return self.error("EOF while parsing a string");
                }
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    i += 2;
                }
                Some(0..=0x1f) => {
                    self.pos = i;
                    return self
                        .error("control character (\\u0000-\\u001F) found while parsing a string");
                }
                Some(_) => i += 1,
            }
        }
        let body = &self.text[start + 1..i];
        let whole = &self.text[start..=i];
        self.pos = i + 1;
        if escaped {
            return match serde_json::from_slice::<String>(whole) {
                Ok(s) => Ok(Cow::Owned(s)),
                Err(e) => {
                    self.pos = start;
                    self.error(&e.to_string())
                }
            };
        }
        match std::str::from_utf8(body) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(_) => {
                self.pos = start;
                self.error("invalid unicode code point")
            }
        }
    }

    /// The next key of an entered object (`first`: none read yet), or `None` at its end.
    pub(super) fn key(&mut self, first: bool) -> Result<Option<Cow<'a, str>>, Unsupported> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                self.nesting -= 1;
                return Ok(None);
            }
            Some(b',') if !first => {
                self.pos += 1;
                self.skip_whitespace();
            }
            Some(_) if first => {}
            Some(_) => return self.error("expected `,` or `}`"),
            None => return self.error("EOF while parsing an object"),
        }
        if self.text.get(self.pos) != Some(&b'"') {
            return self.error("key must be a string");
        }
        let key = self.string()?;
        if self.peek() != Some(b':') {
            return self.error("expected `:`");
        }
        self.pos += 1;
        Ok(Some(key))
    }

    /// Whether an entered array has another item (`first`: none read yet).
    pub(super) fn item(&mut self, first: bool) -> Result<bool, Unsupported> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                self.nesting -= 1;
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) if first => Ok(true),
            Some(_) => self.error("expected `,` or `]`"),
            None => self.error("EOF while parsing a list"),
        }
    }

    /// Reads past one value (for a visitor that stopped early).
    pub(super) fn skip_value(&mut self) -> Result<(), Unsupported> {
        match self.token()? {
            Token::Object => {
                let mut first = true;
                while self.key(first)?.is_some() {
                    first = false;
                    self.skip_value()?;
                }
            }
            Token::Array => {
                let mut first = true;
                while self.item(first)? {
                    first = false;
                    self.skip_value()?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
