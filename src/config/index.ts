export { ConfigError, type ConfigChange, type ConfigProblem, ConfigResolver, DEFAULT_CONFIG_FILE, loadLocalConfig, RESTART_EXIT_CODE } from './config.js';
export { type Config, formatValue, PARAM_NAMES, type ParamName, PARAMS, paramNamed } from './params.js';
export { type FailsafePort, ParseError } from './parsers.js';
