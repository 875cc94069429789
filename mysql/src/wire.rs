//! The MySQL protocol's basic encodings: little-endian integers, length-encoded integers and
//! strings, NUL-terminated strings. Reading never panics: a short or malformed packet is an
//! error the connection answers, whatever a client sends.

/// Appends a length-encoded integer.
pub fn put_lenenc_int(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Appends a length-encoded string.
pub fn put_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A packet's bytes, read front to back.
pub struct Reader<'a>(&'a [u8]);

/// What a malformed packet is answered with (MySQL's ER_MALFORMED_PACKET wording).
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed;

pub type Read<T> = Result<T, Malformed>;

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self(bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        if self.0.len() < n {
            return Err(Malformed);
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    pub fn u8(&mut self) -> Read<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Read<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Read<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Read<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn array<const N: usize>(&mut self) -> Read<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    pub fn lenenc_int(&mut self) -> Read<u64> {
        Ok(match self.u8()? {
            0xfc => u64::from(self.u16()?),
            0xfd => {
                let [a, b, c] = self.array()?;
                u64::from_le_bytes([a, b, c, 0, 0, 0, 0, 0])
            }
            0xfe => self.u64()?,
            // 0xfb is NULL and 0xff an error: neither is a length.
            0xfb | 0xff => return Err(Malformed),
            n => u64::from(n),
        })
    }

    pub fn lenenc_bytes(&mut self) -> Read<&'a [u8]> {
        let len = usize::try_from(self.lenenc_int()?).map_err(|_| Malformed)?;
        self.take(len)
    }

    /// Bytes up to a NUL, which is consumed; all that is left if there is none.
    pub fn null_terminated(&mut self) -> &'a [u8] {
        match self.0.iter().position(|&b| b == 0) {
            Some(at) => {
                let text = &self.0[..at];
                self.0 = &self.0[at + 1..];
                text
            }
            None => self.rest(),
        }
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_encoded_integers_round_trip() {
        for n in [
            0,
            250,
            251,
            0xffff,
            0x1_0000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc_int(&mut out, n);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.lenenc_int(), Ok(n));
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn short_input_is_malformed_not_a_panic() {
        assert_eq!(Reader::new(&[0xfc, 1]).lenenc_int(), Err(Malformed));
        assert_eq!(Reader::new(&[5, 1, 2]).lenenc_bytes(), Err(Malformed));
        assert_eq!(Reader::new(&[1, 2, 3]).u32(), Err(Malformed));
        assert_eq!(Reader::new(&[0xfb]).lenenc_int(), Err(Malformed));
        let mut reader = Reader::new(b"abc");
        assert_eq!(reader.null_terminated(), b"abc");
        assert!(reader.is_empty());
    }
}
