export {
  CONFIG_EXIT_CODE,
  ConfigError,
  type ConfigChange,
  type ConfigProblem,
  ConfigResolver,
  DEFAULT_CONFIG_FILE,
  loadLocalConfig,
  RESTART_EXIT_CODE,
} from './config.js';
export {
  type Config,
  type FailsafePort,
  formatValue,
  PARAM_NAMES,
  type ParamName,
  PARAMS,
  paramNamed,
  ParseError,
} from './params.js';
export { FELIX_PARAMS, felixParam } from './catalogue.js';
