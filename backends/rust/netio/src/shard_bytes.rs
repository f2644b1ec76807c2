//! The memory a streamed shard's bytes fill: pages mapped for it alone when it is
//! large, so that they go back to the system when it is dropped.
//!
//! glibc's malloc raises its mmap threshold to the size of a mapped block freed
//! (up to 32 MiB), after which blocks that size come from its heaps and stay
//! there once freed: a process cycling through shards under a byte bound
//! (`max_bytes_in_memory`) grew by several times the bound. An anonymous mapping
//! of its own is unmapped when dropped, whatever malloc's state.

use memmap2::MmapMut;

/// From this size on a buffer is a mapping of its own (below it, malloc's heap
/// is cheaper and the amounts too small to matter).
const MAPPED_FROM: u64 = 1 << 20;

pub enum ShardBytes {
    Heap(Vec<u8>),
    Mapped { map: MmapMut, len: usize },
}

impl ShardBytes {
    /// Room for `size` bytes, none received yet: mapped (pages committed as bytes
    /// arrive), or on the heap with at most `reserve` bytes reserved up front.
    pub fn new(size: u64, reserve: u64) -> ShardBytes {
        if size >= MAPPED_FROM {
            if let Ok(size) = usize::try_from(size) {
                if let Ok(map) = MmapMut::map_anon(size) {
                    return ShardBytes::Mapped { map, len: 0 };
                }
            }
        }
        ShardBytes::Heap(Vec::with_capacity(size.min(reserve) as usize))
    }

    pub fn len(&self) -> usize {
        match self {
            ShardBytes::Heap(data) => data.len(),
            ShardBytes::Mapped { len, .. } => *len,
        }
    }

    /// The bytes received so far.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            ShardBytes::Heap(data) => data,
            ShardBytes::Mapped { map, len } => &map[..*len],
        }
    }

    /// Appends `chunk`; the caller has checked that it fits in the size given to `new`.
    pub fn extend_from_slice(&mut self, chunk: &[u8]) {
        match self {
            ShardBytes::Heap(data) => data.extend_from_slice(chunk),
            ShardBytes::Mapped { map, len } => {
                let end = *len + chunk.len();
                map[*len..end].copy_from_slice(chunk);
                *len = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rss() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS"))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    }

    #[test]
    fn small_and_large_buffers_hold_what_is_appended() {
        for size in [10u64, MAPPED_FROM + 5] {
            let mut bytes = ShardBytes::new(size, 1 << 20);
            let chunk: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            bytes.extend_from_slice(&chunk[..3]);
            bytes.extend_from_slice(&chunk[3..]);
            assert_eq!(bytes.len() as u64, size);
            assert_eq!(bytes.as_slice(), &chunk[..]);
        }
        assert!(matches!(
            ShardBytes::new(MAPPED_FROM, 0),
            ShardBytes::Mapped { .. }
        ));
        assert!(matches!(
            ShardBytes::new(MAPPED_FROM - 1, 0),
            ShardBytes::Heap(_)
        ));
    }

    /// Shards of 8 MiB filled and dropped, with small blocks allocated after each
    /// still alive (what pins freed heap memory): their pages are given back.
    #[test]
    fn dropped_buffers_go_back_to_the_system() {
        let Some(base) = rss() else { return };
        let freed = vec![1u8; 16 << 20];
        drop(std::hint::black_box(freed)); // malloc's mmap threshold rises to 16 MiB
        let chunk = vec![1u8; 1 << 20];
        let mut buffers = Vec::new();
        let mut pins = Vec::new();
        for _ in 0..8 {
            let mut bytes = ShardBytes::new(8 << 20, 8 << 20);
            for _ in 0..8 {
                bytes.extend_from_slice(&chunk);
            }
            buffers.push(bytes);
            pins.push(std::hint::black_box(vec![1u8; 200_000]));
        }
        let full = rss().unwrap_or(0).saturating_sub(base);
        drop(buffers);
        let after = rss().unwrap_or(0).saturating_sub(base);
        assert!(full >= 60 << 20, "the 64 MiB were not resident: {full}");
        assert!(
            after <= 16 << 20,
            "{} MiB of freed shard buffers still resident",
            after >> 20
        );
    }
}
