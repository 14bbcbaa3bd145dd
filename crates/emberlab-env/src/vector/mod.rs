//! Vector environments with Gymnasium 1.x's next-step autoreset: [`SyncVecEnv`] on the
//! calling thread and [`ThreadedVecEnv`] over worker threads, both behind [`VecEnv`].

mod env_batch;
mod normalize;
mod sync_vec;
mod threaded;
mod vec_env;

pub use normalize::{
    BatchMeanVar, NormalizeConfig, NormalizedFactory, OBS_NORMALIZER_FILE, ObsNormalizer,
    VecNormalize,
};
pub use sync_vec::SyncVecEnv;
pub use threaded::ThreadedVecEnv;
pub use vec_env::{VecActions, VecEnv, VecStep};
