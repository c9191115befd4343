/**
 * @module job/default-config — ajet-edge's own default swarm YAML (spec §10.2, §10.4), shipped as text so it
 * loads in workerd as well as in Node (no file reads).
 */

/**
 * The YAML under every {@link AgentJetJob} unless `baseYaml` is given: the `ajet:` tree the engine and our emulator
 * read, with the swarm defaults of spec §10.2 (constructor options) and §10.4 (other keys that matter to the
 * protocol). Written for ajet-edge from those tables, not copied from upstream.
 *
 * Every option of `JOB_OPTION_YAML_PATHS` has its key here, so the merged value of each option is always defined.
 * The trailing `hydra` / `defaults` sections let a real AgentJet engine layer `verl_default` → `ajet_default` →
 * this file (spec §10.1); our emulator ignores them. Keys are snake_case: they are the engine's names.
 */
export const DEFAULT_SWARM_YAML = `# ajet-edge default swarm configuration: the AgentJetJob defaults the server reads.
# Options of AgentJetJob overwrite single keys below; every other key is kept as written.
ajet:
  project_name: ajet_default_project
  experiment_name: read_yaml_name
  experiment_dir: auto              # "auto" -> saved_experiments/<experiment_name> on the server
  backbone: verl

  model:
    path: Qwen/Qwen2.5-7B-Instruct  # the model the server trains (the server reads this key)

  data:
    train_batch_size: 32            # tasks per training step (B)
    max_prompt_length: 3000         # tokens
    max_response_length: 15000      # tokens

  rollout:
    user_workflow: null
    num_repeat: 4                   # episodes per task, the GRPO group size (R)
    max_env_worker: 128             # engine episode workers; keep it a multiple of num_repeat
    max_response_length_in_one_turn: 4096
    max_model_len: 18000            # tokens; >= max_prompt_length + max_response_length
    gpu_memory_utilization: 0.85
    compute_madness_checklist: []
    agent_madness_termination: true
    agent_madness_reward: 0.0
    temperature: 0.9
    top_p: 1.0
    top_k: -1
    max_num_seqs: 64
    multi_turn:
      max_steps: 30
    val_kwargs:
      temperature: 0.0
      do_sample: false

  trainer_common:
    logger: tensorboard
    n_gpus_per_node: 8
    mini_batch_num: 1
    ppo_epochs: 1
    algorithm:
      adv_estimator: grpo
    optim:
      lr: 1.0e-06
    use_kl_loss: true
    kl_loss_coef: 0.002
    save_freq: 20
    test_freq: 20
    total_epochs: 50
    total_training_steps: null
    val_before_train: false         # swarm mode forbids validation before training
    val_only: false
    fsdp_config:
      param_offload: true
      optimizer_offload: true

  lora:
    lora_rank: 0                    # 0 = LoRA off
    lora_alpha: 16
    target_modules: all-linear
    load_format: auto               # must be safetensors when lora_rank > 0
    layered_summon: false           # must be true when lora_rank > 0

  task_reader:
    type: random_dummy              # in swarm mode tasks come from clients; the engine uses placeholders
  task_judge:
    judge_type: customized_protocol
    judge_protocol: null            # rewards come from clients

  enable_interchange_server: true
  enable_swarm_mode: true
  swarm_mode_sample_collection_method: rollout_until_finish_enough_tasks
  swarm_mode_sample_collection_max_cached_episodes: 9999
  interchange_server:
    interchange_method: ipc
    interchange_server_port: 10086
    num_fastapi_process: 2
    max_fastapi_threads: 512
    max_inference_tracker_threads: 64
    already_started: false          # the server sets this itself
  task_runner:
    wrapper_type: asyncio-with-gc

# Read by a real AgentJet engine only: layer the upstream defaults under this file.
hydra:
  searchpath:
    - file://ajet/default_config
    - file://ajet/default_config/verl
defaults:
  - verl_default
  - ajet_default
  - _self_
`;
