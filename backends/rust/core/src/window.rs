use std::collections::{BTreeMap, VecDeque};

/// At most `capacity` batches started but not yet taken; finished batches
/// wait here until their turn (`in_order`) or in completion order.
///
/// Positions are the plan's 0-based batch numbers, started in plan order.
#[derive(Debug)]
pub struct Window<T> {
    capacity: u64,
    in_order: bool,
    started: u64,
    taken: u64,
    next_position: u64,
    finished: BTreeMap<u64, T>,
    completion: VecDeque<u64>,
}

impl<T> Window<T> {
    /// `None` when `capacity` is 0: nothing could ever start.
    pub fn new(capacity: usize, in_order: bool) -> Option<Self> {
        if capacity == 0 {
            return None;
        }
        Some(Window {
            capacity: capacity as u64,
            in_order,
            started: 0,
            taken: 0,
            next_position: 0,
            finished: BTreeMap::new(),
            completion: VecDeque::new(),
        })
    }

    /// Whether one more batch may start now.
    pub fn has_room(&self) -> bool {
        self.started - self.taken < self.capacity
    }

    /// Record one batch as started; false (and nothing recorded) when full.
    pub fn start(&mut self) -> bool {
        if !self.has_room() {
            return false;
        }
        self.started += 1;
        true
    }

    /// Batches started and not yet taken (running or waiting to be taken).
    pub fn occupancy(&self) -> u64 {
        self.started - self.taken
    }

    /// Whether every started batch was taken.
    pub fn is_idle(&self) -> bool {
        self.started == self.taken
    }

    /// A started batch finished with `value`.
    pub fn finish(&mut self, position: u64, value: T) {
        if self.finished.insert(position, value).is_none() && !self.in_order {
            self.completion.push_back(position);
        }
    }

    /// Whether `take` would return a batch now.
    pub fn ready(&self) -> bool {
        if self.in_order {
            self.finished.contains_key(&self.next_position)
        } else {
            !self.completion.is_empty()
        }
    }

    /// The next batch to deliver, if it finished.
    pub fn take(&mut self) -> Option<(u64, T)> {
        let position = if self.in_order {
            self.next_position
        } else {
            *self.completion.front()?
        };
        let value = self.finished.remove(&position)?;
        if self.in_order {
            self.next_position += 1;
        } else {
            self.completion.pop_front();
        }
        self.taken += 1;
        Some((position, value))
    }

    /// The position a timeout is reported for: the batch being waited for.
    pub fn waiting_for(&self) -> u64 {
        if self.in_order {
            self.next_position
        } else {
            self.taken
        }
    }

    /// Remove every finished batch (the epoch is closed), for dropping outside a lock.
    pub fn drain(&mut self) -> Vec<T> {
        self.completion.clear();
        std::mem::take(&mut self.finished).into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Window;

    #[test]
    fn zero_capacity_is_refused() {
        assert!(Window::<u8>::new(0, true).is_none());
    }

    #[test]
    fn start_stops_at_capacity_and_resumes_after_take() {
        let mut window = Window::new(2, true).unwrap();
        assert!(window.start());
        assert!(window.start());
        assert!(!window.start());
        window.finish(0, "a");
        assert!(!window.start(), "finished but not taken still counts");
        assert_eq!(window.take(), Some((0, "a")));
        assert!(window.start());
        assert_eq!(window.occupancy(), 2);
    }

    #[test]
    fn in_order_holds_later_batches_behind_a_slow_one() {
        let mut window = Window::new(3, true).unwrap();
        for _ in 0..3 {
            assert!(window.start());
        }
        window.finish(2, 'c');
        window.finish(1, 'b');
        assert!(!window.ready());
        assert_eq!(window.take(), None);
        assert!(
            !window.has_room(),
            "the reorder buffer counts against the window"
        );
        window.finish(0, 'a');
        assert_eq!(window.take(), Some((0, 'a')));
        assert_eq!(window.take(), Some((1, 'b')));
        assert_eq!(window.take(), Some((2, 'c')));
        assert!(window.is_idle());
    }

    #[test]
    fn completion_order_does_not_wait_for_a_slow_batch() {
        let mut window = Window::new(3, false).unwrap();
        for _ in 0..3 {
            window.start();
        }
        window.finish(2, 'c');
        assert_eq!(window.waiting_for(), 0);
        assert_eq!(window.take(), Some((2, 'c')));
        window.finish(0, 'a');
        window.finish(1, 'b');
        assert_eq!(window.take(), Some((0, 'a')));
        assert_eq!(window.take(), Some((1, 'b')));
        assert_eq!(window.waiting_for(), 3);
    }

    #[test]
    fn every_position_comes_out_once_in_either_mode() {
        for in_order in [true, false] {
            let mut window = Window::new(4, in_order).unwrap();
            let mut next_start = 0u64;
            let mut running: Vec<u64> = Vec::new();
            let mut out = Vec::new();
            // A fixed, scrambled completion schedule.
            let mut seed = 12345u64;
            while out.len() < 100 {
                while next_start < 100 && window.start() {
                    running.push(next_start);
                    next_start += 1;
                }
                if !running.is_empty() {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let pick = (seed >> 33) as usize % running.len();
                    let position = running.swap_remove(pick);
                    window.finish(position, position);
                }
                while let Some((position, value)) = window.take() {
                    assert_eq!(position, value);
                    out.push(position);
                }
                assert!(window.occupancy() <= 4);
            }
            if in_order {
                assert_eq!(out, (0..100).collect::<Vec<_>>());
            } else {
                out.sort_unstable();
                assert_eq!(out, (0..100).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn drain_empties_the_buffer() {
        let mut window = Window::new(2, false).unwrap();
        window.start();
        window.start();
        window.finish(1, 'b');
        window.finish(0, 'a');
        let mut drained = window.drain();
        drained.sort_unstable();
        assert_eq!(drained, vec!['a', 'b']);
        assert!(!window.ready());
    }
}
