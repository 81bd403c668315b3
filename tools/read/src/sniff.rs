//! What kind of file a read opens, told by its first bytes, never by its name:
//! a media type from a small table of magic numbers (images, archives,
//! executables, documents), and whether the file reads as text.
//!
//! A Jupyter notebook is the one type told by its name too (`.ipynb`, as
//! Jupyter itself does), when its bytes are text that opens a JSON object.
//!
//! A file is binary when its type is a binary format, when its head holds a
//! NUL byte (as git and ripgrep decide), or when more than an eighth of its
//! head is not UTF-8. A text file with a few invalid bytes stays text.

/// How many bytes of the file's start are looked at.
pub const HEAD_BYTES: usize = 8 * 1024;

/// The media type of a file that reads as text.
pub const TEXT: &str = "text/plain";

/// The media type of a binary file of no known format.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// The media type of a Jupyter notebook.
pub const NOTEBOOK: &str = "application/x-ipynb+json";

/// What the first bytes tell about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sniffed {
    /// The media type (IANA), e.g. `image/png`; `text/plain` for text, and
    /// `application/octet-stream` for a binary file of no known format.
    pub media_type: &'static str,
    /// Whether the file reads as text (UTF-8, perhaps with a few bad bytes).
    pub text: bool,
}

/// A known format: its media type and the bytes it starts with at `offset`.
struct Magic {
    media_type: &'static str,
    offset: usize,
    bytes: &'static [u8],
}

/// The formats told apart, most specific first.
const MAGIC: &[Magic] = &[
    Magic { media_type: "image/png", offset: 0, bytes: b"\x89PNG\r\n\x1a\n" },
    Magic { media_type: "image/jpeg", offset: 0, bytes: b"\xff\xd8\xff" },
    Magic { media_type: "image/gif", offset: 0, bytes: b"GIF87a" },
    Magic { media_type: "image/gif", offset: 0, bytes: b"GIF89a" },
    Magic { media_type: "image/webp", offset: 8, bytes: b"WEBP" },
    Magic { media_type: "image/bmp", offset: 0, bytes: b"BM" },
    Magic { media_type: "image/x-icon", offset: 0, bytes: b"\0\0\x01\0" },
    Magic { media_type: "image/tiff", offset: 0, bytes: b"II*\0" },
    Magic { media_type: "image/tiff", offset: 0, bytes: b"MM\0*" },
    Magic { media_type: "application/pdf", offset: 0, bytes: b"%PDF-" },
    Magic { media_type: "application/zip", offset: 0, bytes: b"PK\x03\x04" },
    Magic { media_type: "application/zip", offset: 0, bytes: b"PK\x05\x06" },
    Magic { media_type: "application/gzip", offset: 0, bytes: b"\x1f\x8b" },
    Magic { media_type: "application/x-bzip2", offset: 0, bytes: b"BZh" },
    Magic { media_type: "application/x-xz", offset: 0, bytes: b"\xfd7zXZ\0" },
    Magic { media_type: "application/zstd", offset: 0, bytes: b"\x28\xb5\x2f\xfd" },
    Magic { media_type: "application/x-7z-compressed", offset: 0, bytes: b"7z\xbc\xaf\x27\x1c" },
    Magic { media_type: "application/x-tar", offset: 257, bytes: b"ustar" },
    Magic { media_type: "application/x-elf", offset: 0, bytes: b"\x7fELF" },
    Magic { media_type: "application/wasm", offset: 0, bytes: b"\0asm" },
    Magic { media_type: "application/x-mach-binary", offset: 0, bytes: b"\xcf\xfa\xed\xfe" },
    Magic { media_type: "application/x-mach-binary", offset: 0, bytes: b"\xce\xfa\xed\xfe" },
    Magic { media_type: "application/vnd.sqlite3", offset: 0, bytes: b"SQLite format 3\0" },
    Magic { media_type: "audio/mpeg", offset: 0, bytes: b"ID3" },
    Magic { media_type: "audio/ogg", offset: 0, bytes: b"OggS" },
    Magic { media_type: "audio/flac", offset: 0, bytes: b"fLaC" },
    Magic { media_type: "audio/wav", offset: 8, bytes: b"WAVE" },
    Magic { media_type: "video/mp4", offset: 4, bytes: b"ftyp" },
    Magic { media_type: "font/woff", offset: 0, bytes: b"wOFF" },
    Magic { media_type: "font/woff2", offset: 0, bytes: b"wOF2" },
];

/// What `head` (the file's first bytes, at most `HEAD_BYTES`; `whole` when
/// they are the whole file) tells about the file.
pub fn sniff(head: &[u8], whole: bool) -> Sniffed {
    let binary = |media_type| Sniffed { media_type, text: false };
    // A format's magic alone could be text ("BM", "ID3" starting a line), so
    // a magic number counts only for a head that does not read as text.
    let looks_text = reads_as_text(head, whole);
    if let Some(magic) = MAGIC.iter().find(|m| head.get(m.offset..m.offset + m.bytes.len()) == Some(m.bytes)) {
        // These start with bytes that are never text: trust them as they are.
        let unmistakable = magic.bytes.iter().any(|b| !b.is_ascii_graphic() && *b != b' ');
        if unmistakable || !looks_text || magic.media_type == "application/pdf" {
            return binary(magic.media_type);
        }
    }
    match looks_text {
        true => Sniffed { media_type: TEXT, text: true },
        false => binary(OCTET_STREAM),
    }
}

/// `sniffed` for a file named `name`: a notebook when it is text named
/// `*.ipynb` whose `head` opens a JSON object.
pub fn notebook(name: &str, sniffed: Sniffed, head: &[u8]) -> Sniffed {
    let opens_object = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    match sniffed.text && opens_object && name.to_ascii_lowercase().ends_with(".ipynb") {
        true => Sniffed { media_type: NOTEBOOK, text: true },
        false => sniffed,
    }
}

/// Whether `head` reads as text: no NUL byte, and at most an eighth of it
/// bytes that are not UTF-8 (a character cut at the end of an unfinished
/// head is not counted).
fn reads_as_text(head: &[u8], whole: bool) -> bool {
    if memchr::memchr(0, head).is_some() {
        return false;
    }
    let mut invalid = 0usize;
    let mut rest = head;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(_) => break,
            Err(e) => match e.error_len() {
                Some(n) => {
                    invalid += n;
                    rest = &rest[e.valid_up_to() + n..];
                }
                None if whole => {
                    invalid += rest.len() - e.valid_up_to();
                    break;
                }
                None => break,
            },
        }
    }
    invalid * 8 <= head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1x1 PNG's first bytes.
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

    #[test]
    fn images_are_told_by_their_bytes() {
        assert_eq!(sniff(PNG, true), Sniffed { media_type: "image/png", text: false });
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF\0", true).media_type, "image/jpeg");
        assert_eq!(sniff(b"GIF89a\x01\0\x01\0\x80\0\0", true).media_type, "image/gif");
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 ", true).media_type, "image/webp");
    }

    #[test]
    fn other_binary_formats_and_unknown_bytes_are_binary() {
        assert_eq!(sniff(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", false).media_type, "application/pdf");
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0", false), Sniffed { media_type: "application/x-elf", text: false });
        assert_eq!(sniff(b"\x1f\x8b\x08\0", true).media_type, "application/gzip");
        let random: Vec<u8> = (0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80).collect();
        assert_eq!(sniff(&random, false), Sniffed { media_type: OCTET_STREAM, text: false });
        assert!(!sniff(b"plain\0text", true).text, "a NUL makes a file binary, as git decides");
    }

    #[test]
    fn a_notebook_is_json_text_named_ipynb() {
        let text = Sniffed { media_type: TEXT, text: true };
        assert_eq!(notebook("a/b.ipynb", text, b"\n {\"cells\": []}").media_type, NOTEBOOK);
        assert_eq!(notebook("a/b.IPYNB", text, b"{}").media_type, NOTEBOOK);
        assert_eq!(notebook("a/b.json", text, b"{}"), text, "by its name too");
        assert_eq!(notebook("b.ipynb", text, b"not json"), text, "and by its bytes");
    }

    #[test]
    fn text_with_a_few_bad_bytes_stays_text() {
        let mut text = "fn main() {}\n".repeat(20).into_bytes();
        text[5] = 0xff;
        text[40] = 0xc3;
        assert_eq!(sniff(&text, true), Sniffed { media_type: TEXT, text: true });
        assert!(sniff(b"", true).text, "an empty file is text");
        assert!(sniff("é".repeat(100).as_bytes()[..199].as_ref(), false).text, "a character cut by the head");
        assert!(sniff(b"BMW and ID3 are words\n", true).text, "a printable magic in text is text");
    }
}
