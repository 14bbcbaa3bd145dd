//! [`Catch`]: bsuite's Catch (Osband et al. 2020) drawn as pixels — a ball falls one row a
//! step from a random column of the top row, the agent moves a paddle along the bottom row
//! (left, stay, right), and the episode ends when the ball reaches the bottom: reward +1
//! where the paddle is under it, −1 where it is not. Every episode is `rows − 1` steps
//! long; a random policy scores about −0.6, a perfect one +1.
//!
//! It is the image task of the learning tests: small enough to train a convolutional
//! Q-network in seconds, yet only solvable by reading the ball's column from the pixels.

use super::{FrameEnv, FrameStep};
use emberlab_core::{EmberRng, Error, Result};

/// Catch as `[1, rows · cell_h, columns · cell_w]` frames: the ball's and the paddle's
/// cells 255, the rest 0 (module docs). Actions: 0 left, 1 stay, 2 right.
#[derive(Clone, Debug)]
pub struct Catch {
    rows: usize,
    columns: usize,
    cell: [usize; 2],
    rng: EmberRng,
    ball: (usize, usize),
    paddle: usize,
    /// Whether the episode ended (a reset is due).
    ended: bool,
    frame: Vec<u8>,
}

impl Default for Catch {
    /// bsuite's 10 rows × 5 columns, each cell 4 × 8 pixels: 40 × 40 frames, large enough
    /// for the Nature CNN's 8×8/4, 4×4/2, 3×3/1 convolutions.
    fn default() -> Self {
        Catch::new(10, 5, [4, 8]).expect("valid sizes")
    }
}

impl Catch {
    /// `rows × columns` cells of `cell = [height, width]` pixels each.
    ///
    /// # Errors
    /// Fewer than 2 rows or 1 column, or an empty cell.
    pub fn new(rows: usize, columns: usize, cell: [usize; 2]) -> Result<Self> {
        if rows < 2 || columns == 0 || cell.contains(&0) {
            return Err(Error::invalid(
                "catch size",
                format!("{rows} rows × {columns} columns of {cell:?} pixels"),
                ">= 2 rows, >= 1 column, cells of >= 1 × 1 pixels",
            ));
        }
        Ok(Catch {
            rows,
            columns,
            cell,
            rng: EmberRng::seed_from(0),
            ball: (0, 0),
            paddle: columns / 2,
            ended: true,
            frame: vec![0; rows * cell[0] * columns * cell[1]],
        })
    }

    /// The ball's `(row, column)`.
    pub fn ball(&self) -> (usize, usize) {
        self.ball
    }

    /// The paddle's column (on the bottom row).
    pub fn paddle(&self) -> usize {
        self.paddle
    }

    fn draw(&mut self) {
        self.frame.fill(0);
        let width = self.columns * self.cell[1];
        let [ch, cw] = self.cell;
        let ball = self.ball;
        for (row, column) in [ball, (self.rows - 1, self.paddle)] {
            for y in row * ch..(row + 1) * ch {
                self.frame[y * width + column * cw..y * width + (column + 1) * cw].fill(255);
            }
        }
    }
}

impl FrameEnv for Catch {
    fn frame_shape(&self) -> [usize; 3] {
        [1, self.rows * self.cell[0], self.columns * self.cell[1]]
    }

    fn actions(&self) -> usize {
        3
    }

    fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]> {
        if let Some(seed) = seed {
            self.rng = EmberRng::seed_from(seed);
        }
        self.ball = (0, self.rng.below(self.columns as u64) as usize);
        self.paddle = self.columns / 2;
        self.ended = false;
        self.draw();
        Ok(&self.frame)
    }

    fn step(&mut self, action: usize) -> Result<FrameStep> {
        if action >= 3 {
            return Err(Error::InvalidAction {
                action: action.to_string(),
                space: "Discrete(3) of Catch".into(),
            });
        }
        if self.ended {
            return Err(Error::invalid(
                "catch step",
                "a step before a reset",
                "a reset at the start and after every episode end",
            ));
        }
        self.paddle = (self.paddle + action)
            .saturating_sub(1)
            .min(self.columns - 1);
        self.ball.0 += 1;
        let terminated = self.ball.0 == self.rows - 1;
        let reward = match (terminated, self.ball.1 == self.paddle) {
            (false, _) => 0.0,
            (true, true) => 1.0,
            (true, false) => -1.0,
        };
        self.ended = terminated;
        self.draw();
        Ok(FrameStep::new(reward, terminated, false))
    }

    fn frame(&self) -> &[u8] {
        &self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells drawn lit, read back from the pixels.
    fn lit(env: &Catch) -> Vec<(usize, usize)> {
        let [_, h, w] = env.frame_shape();
        let mut cells = Vec::new();
        for y in (0..h).step_by(4) {
            for x in (0..w).step_by(8) {
                if env.frame()[y * w + x] == 255 {
                    cells.push((y / 4, x / 8));
                }
            }
        }
        cells
    }

    #[test]
    fn the_ball_falls_and_the_paddle_catches_it() {
        let mut env = Catch::default();
        env.reset(Some(3)).unwrap();
        let (_, column) = env.ball();
        assert_eq!(lit(&env), vec![(0, column), (9, 2)]);
        // Walk the paddle under the ball, then stay.
        let mut total = 0.0;
        for t in 1..=9 {
            let action = match env.paddle().cmp(&column) {
                std::cmp::Ordering::Less => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Greater => 0,
            };
            let step = env.step(action).unwrap();
            total += step.reward;
            assert_eq!(step.terminated, t == 9, "step {t}");
            assert_eq!(env.ball(), (t, column));
        }
        assert_eq!(total, 1.0);
        assert_eq!(lit(&env), vec![(9, column)]);
        assert!(env.step(1).is_err(), "a step after the end needs a reset");
    }

    #[test]
    fn a_miss_costs_one_and_the_paddle_stays_on_the_board() {
        let mut env = Catch::default();
        env.reset(Some(0)).unwrap();
        let column = env.ball().1;
        let away = if column < 2 { 2 } else { 0 };
        let mut last = FrameStep::new(0.0, false, false);
        for _ in 0..9 {
            last = env.step(away).unwrap();
        }
        assert_eq!(env.paddle(), if away == 2 { 4 } else { 0 });
        assert_eq!(
            (last.reward, last.terminated, last.game_over()),
            (-1.0, true, true)
        );
        assert!(env.step(3).is_err());
        assert!(Catch::new(1, 5, [1, 1]).is_err());
    }

    #[test]
    fn seeds_choose_the_columns() {
        let columns = |seed| {
            let mut env = Catch::default();
            env.reset(Some(seed)).unwrap();
            (0..200)
                .map(|_| {
                    env.reset(None).unwrap();
                    env.ball().1
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(columns(5), columns(5));
        assert_ne!(columns(5), columns(6));
        let c = columns(1);
        for k in 0..5 {
            let share = c.iter().filter(|&&x| x == k).count();
            assert!((20..=60).contains(&share), "column {k}: {share} of 200");
        }
    }
}
