/**
 * On Node 20 the AWS SDK warns once per process, at its first client, that its releases from 2027 need
 * Node 22. The CLI and the testkit are development tools, and that warning is not theirs to print, so
 * they turn it off for their process, before any SDK client exists, unless the environment already
 * decides (`AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=false` keeps it).
 * @module
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
