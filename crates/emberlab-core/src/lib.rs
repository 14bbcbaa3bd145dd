//! # emberlab-core
//!
//! The vocabulary every Ember crate shares: observation/action [`Space`]s, the [`Env`] trait
//! with Gymnasium semantics, borrowed [`Transition`]s and column-major [`Batch`]es, the
//! [`Error`] type, the seedable [`EmberRng`], the [`denormals`] mode of the threads that
//! run network math, and the [`machine`]'s name.
//!
//! ```
//! use emberlab_core::{BoxSpace, EmberRng, Error, Space};
//!
//! let space = Space::Box(BoxSpace::uniform(3, -1.0, 1.0)?);
//! assert_eq!(space.flat_dim(), 3);
//!
//! let mut rng = EmberRng::seed_from(42);
//! let u = rng.next_f64();
//! assert!((0.0..1.0).contains(&u));
//! # Ok::<(), Error>(())
//! ```

#![warn(missing_docs)]

pub mod denormals;
pub mod env;
pub mod error;
pub mod machine;
pub mod rng;
pub mod space;
pub mod state;
pub mod transition;

pub use env::{Action, Env, Step, StepInfo};
pub use error::{Error, Result, all_finite};
pub use rng::EmberRng;
pub use space::{BoxSpace, Discrete, Space};
pub use transition::{Batch, Transition};
