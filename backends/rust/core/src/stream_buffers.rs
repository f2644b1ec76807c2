use std::collections::VecDeque;

/// What the consumer gets from [`StreamBuffers::take`].
#[derive(Debug, PartialEq, Eq)]
pub enum Take<T> {
    /// The next batch, and the stream it came from.
    Batch(usize, T),
    /// Nothing ready yet: wait.
    Wait,
    /// Every stream is exhausted and drained.
    End,
}

/// One bounded buffer per stream of an iterable epoch.
///
/// `in_order` delivers round-robin over the streams still running, skipping
/// exhausted ones (PyTorch's order); otherwise in completion order.
#[derive(Debug)]
pub struct StreamBuffers<T> {
    cap: usize,
    in_order: bool,
    buffers: Vec<VecDeque<T>>,
    exhausted: Vec<bool>,
    completion: VecDeque<usize>,
    active: Vec<usize>,
    turn: usize,
    changes: u64,
}

impl<T> StreamBuffers<T> {
    /// `window` batches shared by `streams` streams: `max(1, window / streams)` each.
    ///
    /// `None` when `streams` or `window` is 0, or when the per-stream
    /// bookkeeping cannot be allocated: `streams` comes from the caller, and an
    /// infallible allocation of an absurd count aborts the process.
    pub fn new(streams: usize, window: usize, in_order: bool) -> Option<Self> {
        if streams == 0 || window == 0 {
            return None;
        }
        let mut buffers = Vec::new();
        let mut exhausted = Vec::new();
        let mut active = Vec::new();
        buffers.try_reserve_exact(streams).ok()?;
        exhausted.try_reserve_exact(streams).ok()?;
        active.try_reserve_exact(streams).ok()?;
        buffers.extend((0..streams).map(|_| VecDeque::new()));
        exhausted.resize(streams, false);
        active.extend(0..streams);
        Some(StreamBuffers {
            cap: (window / streams).max(1),
            in_order,
            buffers,
            exhausted,
            completion: VecDeque::new(),
            active,
            turn: 0,
            changes: 0,
        })
    }

    /// Batches one stream may hold, started but not taken.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Whether stream `stream` may produce one more batch now.
    pub fn has_room(&self, stream: usize) -> bool {
        self.buffers.get(stream).is_some_and(|b| b.len() < self.cap)
    }

    /// Counts pushes and ends: a consumer waits for it to change.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Batches waiting in every buffer.
    pub fn occupancy(&self) -> usize {
        self.buffers.iter().map(VecDeque::len).sum()
    }

    pub fn push(&mut self, stream: usize, value: T) {
        if let Some(buffer) = self.buffers.get_mut(stream) {
            buffer.push_back(value);
            self.completion.push_back(stream);
            self.changes += 1;
        }
    }

    /// Stream `stream` produced its last batch.
    pub fn end(&mut self, stream: usize) {
        if let Some(flag) = self.exhausted.get_mut(stream) {
            *flag = true;
            self.changes += 1;
        }
    }

    pub fn take(&mut self) -> Take<T> {
        if self.in_order {
            self.take_round_robin()
        } else {
            self.take_completed()
        }
    }

    fn take_round_robin(&mut self) -> Take<T> {
        loop {
            if self.active.is_empty() {
                return Take::End;
            }
            self.turn %= self.active.len();
            let stream = self.active[self.turn];
            if let Some(value) = self.buffers[stream].pop_front() {
                self.turn += 1;
                return Take::Batch(stream, value);
            }
            if !self.exhausted[stream] {
                return Take::Wait;
            }
            // The turn now points at the next stream.
            self.active.remove(self.turn);
        }
    }

    fn take_completed(&mut self) -> Take<T> {
        while let Some(stream) = self.completion.pop_front() {
            if let Some(value) = self.buffers[stream].pop_front() {
                return Take::Batch(stream, value);
            }
        }
        if self.exhausted.iter().all(|&e| e) {
            Take::End
        } else {
            Take::Wait
        }
    }

    /// Remove every buffered batch (the epoch is closed), for dropping outside a lock.
    pub fn drain(&mut self) -> Vec<T> {
        self.completion.clear();
        self.buffers.iter_mut().flat_map(|b| b.drain(..)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{StreamBuffers, Take};

    #[test]
    fn window_is_split_between_streams() {
        assert_eq!(StreamBuffers::<u8>::new(2, 5, true).unwrap().cap(), 2);
        assert_eq!(StreamBuffers::<u8>::new(4, 2, true).unwrap().cap(), 1);
        assert!(StreamBuffers::<u8>::new(0, 2, true).is_none());
    }

    #[test]
    fn a_stream_count_that_cannot_be_allocated_is_refused() {
        assert!(StreamBuffers::<u8>::new(usize::MAX / 2, 2, true).is_none());
    }

    #[test]
    fn round_robin_waits_for_the_stream_whose_turn_it_is() {
        let mut buffers = StreamBuffers::new(2, 4, true).unwrap();
        buffers.push(1, "b0");
        assert_eq!(buffers.take(), Take::Wait);
        buffers.push(0, "a0");
        assert_eq!(buffers.take(), Take::Batch(0, "a0"));
        assert_eq!(buffers.take(), Take::Batch(1, "b0"));
    }

    #[test]
    fn round_robin_skips_exhausted_streams() {
        let mut buffers = StreamBuffers::new(3, 6, true).unwrap();
        buffers.push(0, 'a');
        buffers.end(1);
        buffers.push(2, 'c');
        buffers.push(0, 'A');
        buffers.end(0);
        buffers.end(2);
        let mut out = Vec::new();
        while let Take::Batch(_, value) = buffers.take() {
            out.push(value);
        }
        assert_eq!(out, vec!['a', 'c', 'A']);
        assert_eq!(buffers.take(), Take::End);
    }

    #[test]
    fn completion_order_takes_whatever_is_ready() {
        let mut buffers = StreamBuffers::new(2, 4, false).unwrap();
        buffers.push(1, 'b');
        assert_eq!(buffers.take(), Take::Batch(1, 'b'));
        assert_eq!(buffers.take(), Take::Wait);
        buffers.end(0);
        buffers.end(1);
        assert_eq!(buffers.take(), Take::End);
    }

    #[test]
    fn has_room_respects_the_cap() {
        let mut buffers = StreamBuffers::new(2, 2, true).unwrap();
        assert!(buffers.has_room(0));
        buffers.push(0, 1);
        assert!(!buffers.has_room(0));
        assert!(buffers.has_room(1));
        assert!(!buffers.has_room(7));
        assert_eq!(buffers.drain(), vec![1]);
        assert!(buffers.has_room(0));
    }
}
