//! `ItemRandom` of `transforms/_random.py`: SplitMix64 keyed by the epoch's
//! seed and the item's index, in the same integer steps.

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
const INDEX_MIX: u64 = 0xD1B5_4A32_D192_ED03;

fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub struct ItemRandom {
    state: u64,
}

impl ItemRandom {
    /// `index_word`: the index as Python's `index_word` gives it (an int, two's complement).
    pub fn new(epoch_seed: u64, index_word: u64) -> ItemRandom {
        ItemRandom {
            state: epoch_seed ^ mix(index_word.wrapping_mul(INDEX_MIX)),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn uniform_between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.uniform()
    }

    /// A standard normal draw (Box-Muller's cosine branch, two uniforms), as
    /// `_random.py` computes it: `ln` and `cos` are the C library's on both sides.
    pub fn normal(&mut self) -> f64 {
        let radius = (-2.0 * (1.0 - self.uniform()).ln()).sqrt();
        radius * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_published_outputs_for_seed_zero() {
        let mut stream = ItemRandom::new(0, 0);
        assert_eq!(stream.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(stream.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(ItemRandom::new(12345, 7).next_u64(), 0xFFE1_9E76_DAB0_3E8A);
        assert_eq!(ItemRandom::new(1, u64::MAX).below(10), 4);
    }
}
