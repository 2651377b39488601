#!/usr/bin/env node
// Committed shim so npm can link an executable `mom` before the TypeScript is built.
import "../dist/main.js";
