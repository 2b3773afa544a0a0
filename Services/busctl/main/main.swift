import BusCtlCore

await BusCtl.runFromCommandLine()
