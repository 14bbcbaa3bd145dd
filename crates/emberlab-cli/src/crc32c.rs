//! CRC-32C (Castagnoli), the checksum of TFRecord framing, table-driven, and TFRecord's
//! masked form of it.

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

/// Byte-wise lookup table, built at compile time.
const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC-32C of `data` (as iSCSI and TFRecord use it: initial value and final xor `!0`).
///
/// ```
/// assert_eq!(emberlab_cli::crc32c::crc32c(b"123456789"), 0xE306_9283);
/// ```
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// TFRecord's masked CRC-32C: `((crc >> 15) | (crc << 17)) + 0xa282ead8` (wrapping).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c(data);
    crc.rotate_right(15).wrapping_add(0xA282_EAD8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // RFC 3720, appendix B.4, and the usual check value.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113F_DB5C);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn mask_is_rotate_plus_constant() {
        // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8, worked out by hand (mod 2^32).
        assert_eq!(masked_crc32c(b"123456789"), 0xC78A_B0E5);
        // Empty data: crc 0, so the mask is the constant alone.
        assert_eq!(masked_crc32c(b""), 0xA282_EAD8);
    }
}
