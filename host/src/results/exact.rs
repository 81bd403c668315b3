//! Whether a JSON text writes back as the same bytes: whether it is what
//! `serde_json` writes of the value it parses (compact, its own escapes and
//! number forms, no key twice in an object), told in one pass over the text
//! without building the value.
//!
//! A page of items shows them in the JSON form as they are, spliced into
//! the structured content; only items that a client parsing the page and
//! writing it back would get byte for byte may be shown so (see
//! `json::Payload`). Parsing each item into a `serde_json::Value` and
//! writing it back took a seventh of the server's time on later pages of a
//! glob: a map per item, its keys hashed and each string copied.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Checks JSON texts, reusing its buffer for what each writes back as.
#[derive(Default)]
pub(super) struct Exact {
    written: Vec<u8>,
}

impl Exact {
    /// Whether `text` is one JSON value that `serde_json` writes back as
    /// `text` itself.
    pub fn writes_back(&mut self, text: &str) -> bool {
        self.written.clear();
        let mut parsed = serde_json::Deserializer::from_str(text);
        let echoed = Echo { out: &mut self.written }.deserialize(&mut parsed).is_ok() && parsed.end().is_ok();
        echoed && self.written == text.as_bytes()
    }
}

/// Writes what it visits as `serde_json` writes a value: each scalar by
/// `serde_json` itself, the brackets, commas and colons compact.
struct Echo<'o> {
    out: &'o mut Vec<u8>,
}

impl Echo<'_> {
    fn scalar<E: de::Error>(self, value: &impl serde::Serialize) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, value).map_err(E::custom)
    }
}

impl<'de> DeserializeSeed<'de> for Echo<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Echo<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(&v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(&v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(&v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // Written as a `Value` holding it is: a float that is not finite as `null`.
        match v.is_finite() {
            true => self.scalar(&v),
            false => self.visit_unit(),
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<(), E> {
        quoted(self.out, v);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(&v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        for at in 0.. {
            // A comma is written before each element but the first, and
            // taken back when the end comes instead.
            let mark = self.out.len();
            if at > 0 {
                self.out.push(b',');
            }
            if seq.next_element_seed(Echo { out: &mut *self.out })?.is_none() {
                self.out.truncate(mark);
                break;
            }
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.out.push(b'{');
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            // A key given twice is kept once by a parsed value: not written back.
            if keys.contains(&key) {
                return Err(de::Error::custom("a key given twice"));
            }
            if !keys.is_empty() {
                self.out.push(b',');
            }
            match &key {
                Cow::Borrowed(text) => quoted(self.out, text),
                Cow::Owned(text) => serde_json::to_writer(&mut *self.out, text).map_err(de::Error::custom)?,
            }
            self.out.push(b':');
            map.next_value_seed(Echo { out: &mut *self.out })?;
            keys.push(key);
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Writes a string the parser lent from the text: it held no escape, so it
/// holds nothing `serde_json` escapes (a quote or a backslash would have
/// ended it or begun one, and the parser refuses control characters), and
/// is written as it is, quoted.
fn quoted(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// An object's key, lent from the text unless it holds an escape (serde's
/// own `Cow` is always read owned).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// The reference: parse into a value, write it back, compare.
    fn by_value(text: &str) -> bool {
        serde_json::from_str::<Value>(text).is_ok_and(|v| serde_json::to_string(&v).unwrap() == text)
    }

    const CASES: &[&str] = &[
        r#"{"path":"/r/a.rs","type":"file"}"#,
        r#"{"path":"/r/a \"q\".rs","count":2}"#,
        r#"{ "spaced": 1 }"#,
        r#"{"a":1,"a":2}"#,
        r#"{"a":{"b":1,"b":1}}"#,
        r#"{"a":1,"b":{"a":1}}"#,
        r#"{"\u0061":1,"a":2}"#,
        r#"{"\u0061":1}"#,
        r#"{"é":"\u00e9"}"#,
        r#"{"é":"é"}"#,
        r#"{"s":"\/"}"#,
        r#"{"s":"\u0001"}"#,
        r#"{"s":"\t\n\r\"\\"}"#,
        r#"{"s":"\b\f"}"#,
        r#"{"s":"😀"}"#,
        r#"{"s":"\ud83d\ude00"}"#,
        r#"[1,"\u0001"]"#,
        "\"a\u{1}b\"",
        "{\"a\u{1}\":1}",
        "\"a\u{7f}b\"",
        "\"a\u{2028}b\"",
        "[]",
        "{}",
        "[ ]",
        "[1,]",
        "[1,2,[3,[4,{}]]]",
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1.0",
        "1.5",
        "1e2",
        "100.0",
        "1E400",
        "-1.25e-7",
        "1.25e-7",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "0.1",
        "3.141592653589793",
        "01",
        "\"a\"",
        "\"a\" ",
        " \"a\"",
        "{\"a\":1}\n",
        "{\"a\":1} x",
        "",
        "{",
        "{\"a\"}",
        "[1 , 2]",
        "{\"a\" :1}",
    ];

    #[test]
    fn writes_back_exactly_what_a_parsed_value_does() {
        let mut exact = Exact::default();
        for case in CASES {
            assert_eq!(exact.writes_back(case), by_value(case), "{case:?}");
        }
    }

    #[test]
    fn agrees_with_a_parsed_value_on_generated_items() {
        // Values of every kind, nested, written compact (exact), then each
        // byte changed in turn (mostly not exact, sometimes still valid).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut exact = Exact::default();
        let alphabet = ["a", "b", "é", "\"", "\\", "\n", "\u{1}", "/", "😀", " "];
        for _ in 0..300 {
            let mut value = serde_json::Map::new();
            for k in 0..(next() % 5) {
                let key = format!("{}{}", alphabet[(next() % 10) as usize], k);
                let leaf = match next() % 6 {
                    0 => Value::from(next() as i64),
                    1 => Value::from((next() % 1000) as f64 / 8.0),
                    2 => Value::from(alphabet[(next() % 10) as usize].repeat((next() % 4) as usize)),
                    3 => Value::Null,
                    4 => Value::from(vec![Value::from(next() % 3 == 0), Value::from(next() % 100)]),
                    _ => serde_json::json!({ "n": { "m": [next() % 7] } }),
                };
                value.insert(key, leaf);
            }
            let text = Value::Object(value).to_string();
            assert!(exact.writes_back(&text), "{text:?}");
            for at in 0..text.len() {
                for with in [b' ', b'1', b'"', b',', b'}'] {
                    let mut changed = text.clone().into_bytes();
                    changed[at] = with;
                    if let Ok(changed) = String::from_utf8(changed) {
                        assert_eq!(exact.writes_back(&changed), by_value(&changed), "{changed:?}");
                    }
                }
            }
        }
    }
}
