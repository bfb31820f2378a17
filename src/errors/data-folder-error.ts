/** The error of a data folder another process already works in. @module */
import { ApiConventionsError, type ErrorOptions } from './api-conventions-error.js';

/**
 * Codes of {@link DataFolderError}. A test pins this list: removing or renaming one is a breaking
 * change.
 */
export const dataFolderErrorCodes = [
  // Another live process (or another lock of this one) holds the folder's lock.
  'data_folder_in_use',
  // The lock file could not be written or read (permissions, a read-only disk, not a folder).
  'data_folder_unlockable',
] as const;

/** A code of {@link DataFolderError}. */
export type DataFolderErrorCode = (typeof dataFolderErrorCodes)[number];

/** What a {@link DataFolderError} is made with, besides its code and message. */
export interface DataFolderErrorOptions extends ErrorOptions {
  /** The folder, as an absolute path. */
  folder: string;
  /** The process that holds the folder, when it is in use. */
  pid?: number | undefined;
}

/**
 * An embedded database's data folder that this process may not open: another process works in it
 * (embedded PostgreSQL allows one process per folder), or its lock cannot be taken.
 */
export class DataFolderError extends ApiConventionsError {
  declare readonly code: DataFolderErrorCode;
  /** The folder, as an absolute path. */
  readonly folder: string;
  /** The process that holds the folder (`data_folder_in_use`). */
  readonly pid: number | undefined;

  /** @param options - the folder, the pid holding it, and the `cause` */
  constructor(code: DataFolderErrorCode, message: string, options: DataFolderErrorOptions) {
    super(code, message, options);
    this.name = 'DataFolderError';
    this.folder = options.folder;
    this.pid = options.pid;
  }
}
